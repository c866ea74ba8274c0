"""Course knowledge has one home (``autograder/knowledge.py``, ``data/knowledge.yaml``): the bytes per parameter of
each training recipe and the training FLOPs rule (6·N·D and its parts). Modules 01, 04 and 06, the reference answers
of 01, 04, 05 and 06, and the lessons read them from there; nobody writes them again."""
import ast
import json
from pathlib import Path

import pytest

from autograder import knowledge
from autograder.modules.m01_devices import lesson as m01
from autograder.modules.m04_training_memory import lesson as m04

REPO = Path(__file__).resolve().parent.parent


def test_every_figure_has_a_source():
    data = knowledge.table()
    assert all(entry["source"] for group in ("precisions", "optimizers") for entry in data[group].values())
    assert "arXiv:2001.08361" in data["flops_per_param_token"]["source"]
    assert set(data["frozen_keeps"]) <= set(knowledge.PARTS)


def test_the_recipes_are_the_papers():
    assert sum(knowledge.bytes_per_param("mixed", "adam").values()) == 16          # ZeRO, Section 3.1
    assert sum(knowledge.bytes_per_param("mixed_fp32_grads", "adam").values()) == 18   # Megatron Core
    assert knowledge.recipe_bytes("inference_bf16") == {"weights": 2, "gradients": 0, "optimizer": 0}
    assert knowledge.bytes_per_param("fp32", None) == {"weights": 4, "gradients": 0, "optimizer": 0}


def test_the_recipe_bytes_of_modules_01_and_04_are_one_table():
    for name, parts in m01.RECIPES.items():
        assert parts == tuple(knowledge.recipe_bytes(name).values()), name
    assert m04.bytes_per_param is knowledge.bytes_per_param
    from course_answers import m01_devices, m04_training_memory
    assert m01_devices.ADAM_MIXED_BYTES_PER_PARAM == m04_training_memory.ADAM_MIXED == 16
    assert m01_devices.FROZEN_BYTES_PER_PARAM == sum(knowledge.recipe_bytes("inference_bf16").values())


def test_training_flops_are_forward_and_backward():
    n, d = 7e9, 2e12
    assert knowledge.forward_flops(n, d) == 2 * n * d
    assert knowledge.backward_flops(n, d) == 4 * n * d
    assert knowledge.training_flops(n, d) == pytest.approx(6 * n * d, rel=1e-15)
    assert m01.step_flops(100, depth=2, batch=10) == knowledge.training_flops(2 * 100 * 100 + 100 * 10, 10)


def _sources():
    """(where, Python source) of every module file, reference answer and lesson code cell."""
    for path in sorted((REPO / "autograder" / "modules").rglob("*.py")) + sorted((REPO / "course_answers").glob("*.py")):
        yield str(path.relative_to(REPO)), path.read_text(encoding="utf-8")
    for path in sorted((REPO / "lessons").glob("*/*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "code":
                code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                                 for line in "".join(cell["source"]).splitlines())
                yield f"{path.relative_to(REPO)} cell {i}", code


def test_no_module_answer_or_lesson_writes_6_n_d_again():
    """A product with the factor 6 (6·N·D, 6·batch·Σ a·b) is the training-FLOPs rule written inline: it reads
    ``knowledge.training_flops`` instead. (Exercise solutions are the learner's: their 6·N·D stays theirs.)"""
    found = []
    for where, code in _sources():
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and any(
                    isinstance(side, ast.Constant) and side.value in (6, 6.0) and not isinstance(side.value, bool)
                    for side in (node.left, node.right)):
                found.append(f"{where}:{node.lineno}")
    assert not found, found
