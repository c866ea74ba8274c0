"""The rank runner (autograder/ranks.py): notebook functions shipped as source, portable start, errors and hangs
reported, no stderr; and the course's all-reduce measurement."""
import sys
import textwrap
import types

import pytest

from autograder import ranks

NOTEBOOK_CELL = '''
import torch
import torch.distributed as dist
import numpy as np

SCALE = 3

def helper(x):
    return x * SCALE

def work(n):
    x = torch.full((n,), float(dist.get_rank() + 1))
    dist.all_reduce(x)
    return [float(v) for v in np.asarray(helper(x))]

def boom():
    raise ValueError("bad learner code")

def stuck():
    buf = torch.zeros(1)
    dist.recv(buf, (dist.get_rank() + 1) % dist.get_world_size())  # every rank waits: a deadlock
    return 1
'''


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """Functions defined as in a notebook: in a module that no other process can import."""
    path = tmp_path_factory.mktemp("nb") / "cell.py"
    path.write_text(textwrap.dedent(NOTEBOOK_CELL))
    module = types.ModuleType("__main__")
    module.__file__ = None
    code = compile(path.read_text(), str(path), "exec")  # linecache finds the file, as IPython's cells
    exec(code, module.__dict__)
    return module


def test_function_source_ships_helpers_modules_and_constants(notebook):
    source = ranks.function_source(notebook.work)
    assert "def work(n):" in source and "def helper(x):" in source
    assert "SCALE = 3" in source and "import numpy as np" in source
    assert source.count("import torch\n") == 1
    compile(source, "<rank>", "exec")


def test_function_source_refuses_lambdas():
    with pytest.raises(ValueError, match="lambda"):
        ranks.function_source(lambda x: x)
    with pytest.raises(ValueError):
        ranks.function_source(42)


def test_run_notebook_function_on_two_world_sizes(notebook, capfd):
    groups = ranks.run(notebook.work, [3], world_sizes=[2, 3], timeout_s=30)
    assert groups == [[[9.0] * 3] * 2, [[18.0] * 3] * 3]  # (1+2)*3 and (1+2+3)*3 on every rank
    assert capfd.readouterr().err == ""


def test_run_without_fork(notebook, monkeypatch):
    monkeypatch.setattr(ranks, "_use_fork", lambda: False)  # what macOS and Windows do
    assert ranks.run(notebook.work, [1], world_sizes=[2], timeout_s=30) == [[[9.0], [9.0]]]


def test_errors_and_deadlocks_are_reported(notebook, capfd):
    with pytest.raises(ranks.RanksError, match="bad learner code"):
        ranks.run(notebook.boom, world_sizes=[2, 3], timeout_s=10)  # the second group is skipped
    with pytest.raises(ranks.RanksError):
        ranks.run(notebook.stuck, world_sizes=[2], timeout_s=2)
    assert capfd.readouterr().err == ""


def test_bad_world_size():
    with pytest.raises(ValueError, match="World sizes"):
        ranks.run("autograder.modules.m05_networking.tasks:ring_program", world_sizes=[0])


def test_free_port_is_free():
    import socket

    port = ranks.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    assert sys.modules["autograder.ranks"] is ranks


def test_transport_errors_are_tried_once_more_and_others_are_not(monkeypatch):
    calls = []

    def flaky(*args):
        calls.append(args)
        if len(calls) == 1:
            raise ranks.RanksError("rank 0: RuntimeError: Read error: Connection reset by peer")
        return [[1, 1]]

    monkeypatch.setattr(ranks, "_run_once", flaky)
    assert ranks.run("x:y", world_sizes=[2]) == [[1, 1]] and len(calls) == 2

    def broken(*args):
        calls.append(args)
        raise ranks.RanksError("rank 1: ValueError: the learner's bug")

    calls.clear()
    monkeypatch.setattr(ranks, "_run_once", broken)
    try:
        ranks.run("x:y", world_sizes=[2])
    except ranks.RanksError:
        pass
    assert len(calls) == 1


# ---------------------------------------------------------------- the all-reduce measurement
def test_measurement_on_a_fake_dist_finds_its_bus_bandwidth():
    from autograder.fakes.dist import FakeDist
    fake = FakeDist(4, alpha_s=0.001, bytes_per_s=5e8)
    rows = ranks.measure_allreduce(fake, [1 << 20], budget_s=0.05)
    [row] = rows
    exact = ranks.bus_bandwidth("all_reduce", 1 << 20, 0.001 + (1 << 20) / 5e8, 4)
    assert row["nbytes"] == 1 << 20 and row["busbw_gbs"] == pytest.approx(exact, rel=0.25)
    assert row["busbw_gbs"] == pytest.approx(ranks.bus_bandwidth("all_reduce", row["nbytes"], row["seconds"], 4))
    assert fake.sizes.count(1 << 20) >= 3 + 1 + 3  # warm-up, probe, at least 3 timed calls
    # a total budget: the ranks stop together before a size that no longer fits
    assert len(ranks.measure_allreduce(fake, [1 << 20] * 20, budget_s=1.0, total_s=0.1)) < 20


def test_allreduce_busbw_on_gloo_ranks(capfd):
    """The report card's measurement (module 06): rows that follow the busbw rule, the best size."""
    found = ranks.allreduce_busbw(world_size=2, budget_s=0.5)
    assert found is not None and found["world_size"] == 2 and found["rows"]
    assert all(r["busbw_gbs"] == pytest.approx(r["nbytes"] / r["seconds"] / 1e9) for r in found["rows"])  # 2(n-1)/n = 1
    assert found["busbw_gbs"] == max(r["busbw_gbs"] for r in found["rows"]) > 0
    assert found["nbytes"] in ranks.GROWING_SIZES
    assert capfd.readouterr().err == ""


def test_allreduce_busbw_failure_is_reported_not_raised(monkeypatch, capsys):
    import subprocess

    def broken(*a, **k):
        raise OSError("no processes here")
    monkeypatch.setattr(subprocess, "Popen", broken)
    assert ranks.allreduce_busbw(budget_s=0.5) is None
    out = capsys.readouterr()
    assert "gloo all-reduce" in out.out and "no processes here" in out.out and out.err == ""
