"""Every course command quoted in a notebook or a doc is one the CLI's own parser accepts (issue 21, item 7)."""
import json
import re
import shlex
from pathlib import Path

import pytest

from autograder import layout
from autograder.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
PLACES = {"YOUR_ID": "kim01", "학번": "kim01", "NN_topic": "01_devices", "NN_주제": "01_devices",
          "<id>": "kim01", "<your id>": "kim01", "<내 id>": "kim01", "<folder>": "inbox", "<폴더>": "inbox",
          "N": "2"}
COMMAND = re.compile(r"(?:\.venv/bin/)?python3? -m autograder(?P<rest>[^`\"\n]*)|`course (?P<course>[^`\n]*)`")


def texts():
    """(where, text) for every notebook cell (lessons, solutions, exercises), README.md and docs/*.md."""
    for path in layout.notebooks(ROOT):
        for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            source = "".join(cell["source"])
            yield f"{path.relative_to(ROOT)} cell {i}", source
    for path in [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))]:
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def quoted():
    """(where, argv) for every quoted command; generic forms (``...``, ``a|b``) are skipped."""
    found = []
    for where, text in texts():
        for match in COMMAND.finditer(text):
            rest = (match.group("rest") if match.group("rest") is not None else match.group("course"))
            rest = rest.split(" #")[0].split("`")[0].strip()
            if "|" in rest or rest.strip(". ") == "" or rest.endswith("..."):
                continue
            rest = re.sub(r"\[([^\]]*)\]", lambda m: m.group(1).replace("...", ""), rest)  # optional parts: used
            for place, value in sorted(PLACES.items(), key=lambda kv: -len(kv[0])):
                rest = re.sub(rf"(?<![\w-]){re.escape(place)}(?![\w-])", value, rest)
            found.append((where, shlex.split(rest)))
    return found


def test_commands_are_found():
    argvs = [argv for _, argv in quoted()]
    assert ["submit", "01_devices", "--student", "kim01"] in argvs
    assert any(argv[:1] == ["instructor"] for argv in argvs) and len(argvs) > 20


@pytest.mark.parametrize("where,argv", quoted(), ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_quoted_command_parses(where, argv):
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:  # --help exits 0
        if exc.code not in (0, None):
            pytest.fail(f"{where}: `python3 -m autograder {' '.join(argv)}` is refused by the parser")


def test_the_old_student_id_form_is_refused_and_quoted_nowhere():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["submit", "01_devices", "--student-id", "kim01"])
    assert not [where for where, text in texts() if "--student-id" in text]
