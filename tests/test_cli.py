"""The ``course`` command line."""
from autograder import cli


def test_hardware_subcommand_prints_the_detected_machine(capsys):
    assert cli.main(["hardware"]) == 0
    out = capsys.readouterr().out
    assert "CPU" in out and "Python" in out


def test_every_documented_subcommand_exists():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"start", "test", "hardware", "instructor", "submit", "site"} <= set(sub.choices)
