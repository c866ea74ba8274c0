"""The rank runner: notebook functions shipped as source, portable start, errors and hangs reported, no stderr."""
import sys
import textwrap
import types

import pytest

from autograder import m05_ranks

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
    source = m05_ranks.function_source(notebook.work)
    assert "def work(n):" in source and "def helper(x):" in source
    assert "SCALE = 3" in source and "import numpy as np" in source
    assert source.count("import torch\n") == 1
    compile(source, "<rank>", "exec")


def test_function_source_refuses_lambdas():
    with pytest.raises(ValueError, match="lambda"):
        m05_ranks.function_source(lambda x: x)
    with pytest.raises(ValueError):
        m05_ranks.function_source(42)


def test_run_notebook_function_on_two_world_sizes(notebook, capfd):
    groups = m05_ranks.run(notebook.work, [3], world_sizes=[2, 3], timeout_s=30)
    assert groups == [[[9.0] * 3] * 2, [[18.0] * 3] * 3]  # (1+2)*3 and (1+2+3)*3 on every rank
    assert capfd.readouterr().err == ""


def test_run_without_fork(notebook, monkeypatch):
    monkeypatch.setattr(m05_ranks, "_use_fork", lambda: False)  # what macOS and Windows do
    assert m05_ranks.run(notebook.work, [1], world_sizes=[2], timeout_s=30) == [[[9.0], [9.0]]]


def test_errors_and_deadlocks_are_reported(notebook, capfd):
    with pytest.raises(m05_ranks.RanksError, match="bad learner code"):
        m05_ranks.run(notebook.boom, world_sizes=[2, 3], timeout_s=10)  # the second group is skipped
    with pytest.raises(m05_ranks.RanksError):
        m05_ranks.run(notebook.stuck, world_sizes=[2], timeout_s=2)
    assert capfd.readouterr().err == ""


def test_bad_world_size():
    with pytest.raises(ValueError, match="World sizes"):
        m05_ranks.run("autograder.checks.m05:ring_program", world_sizes=[0])


def test_free_port_is_free():
    import socket

    port = m05_ranks.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    assert sys.modules["autograder.m05_ranks"] is m05_ranks


def test_transport_errors_are_tried_once_more_and_others_are_not(monkeypatch):
    from autograder import m05_ranks
    calls = []

    def flaky(*args):
        calls.append(args)
        if len(calls) == 1:
            raise m05_ranks.RanksError("rank 0: RuntimeError: Read error: Connection reset by peer")
        return [[1, 1]]

    monkeypatch.setattr(m05_ranks, "_run_once", flaky)
    assert m05_ranks.run("x:y", world_sizes=[2]) == [[1, 1]] and len(calls) == 2

    def broken(*args):
        calls.append(args)
        raise m05_ranks.RanksError("rank 1: ValueError: the learner's bug")

    calls.clear()
    monkeypatch.setattr(m05_ranks, "_run_once", broken)
    try:
        m05_ranks.run("x:y", world_sizes=[2])
    except m05_ranks.RanksError:
        pass
    assert len(calls) == 1
