"""Re-scoring test cells from answer records (pure: no kernel), and the intake of broken notebooks."""
import json

import nbformat
import pytest

from autograder.checks import task
from autograder.checks.core import RECORD_MIME, cases_for, collect
from autograder.grading import intake, records
from autograder.grading.records import Call, calls, rescore

SOURCE = 'check("m00.add", add, points=2,\n### BEGIN HIDDEN TESTS\n      hidden=True,\n### END HIDDEN TESTS\n)'
SEED = 1234


def record(fn=lambda a, b: a + b, seed=SEED, hidden=True, task_id="m00.add", cases=None):
    t = task(task_id)
    recs = collect(t, fn, cases if cases is not None else cases_for(t, hidden, seed))
    payload = {"task": task_id, "points": 2, "hidden": hidden, "seed": seed, "records": recs}
    return {"output_type": "display_data", "data": {RECORD_MIME: payload, "text/plain": "x"}, "metadata": {}}


def test_calls_reads_task_points_and_hidden_flag():
    assert calls(SOURCE) == [Call("m00.add", 2.0, True)]
    assert calls("check('m00.stats', stats, 3)") == [Call("m00.stats", 3.0, False)]
    assert calls("assert 1 == 1") == [] and calls("def broken(:") == []


def test_a_valid_record_is_scored_with_the_reference():
    verdict = rescore(SOURCE, [record()], SEED, 2)
    assert verdict.earned == 2 and verdict.reason is None and "passed" in verdict.text


def test_partial_answers_get_partial_points():
    table = {(1, 2): 3, (0.5, 0.25): 0.75}
    verdict = rescore(SOURCE, [record(lambda a, b: table.get((a, b)))], SEED, 2)
    assert verdict.earned == pytest.approx(0.5)


def test_a_constant_answer_rescores_to_nothing_with_the_reason():
    """Right on one visible case, the same for every case: the grader's rescoring gives 0 (checks.core's rule)."""
    verdict = rescore(SOURCE, [record(lambda a, b: 3)], SEED, 2)
    assert verdict.earned == 0 and "Gives the same answer for every input: 3" in verdict.text


@pytest.mark.parametrize("forged", [
    dict(seed=SEED + 1),  # answers for other cases
    dict(hidden=False),  # visible cases only
    dict(task_id="m00.count", fn=lambda xs: 0),  # another task's record
    dict(cases=[[1, 2]]),  # fewer cases
])
def test_a_record_that_does_not_match_this_run_earns_nothing(forged):
    verdict = rescore(SOURCE, [record(**forged)], SEED, 2)
    assert verdict.earned == 0 and "no answers were recorded" in verdict.reason


def test_malformed_records_earn_nothing_and_do_not_crash():
    good = record()
    extra = json.loads(json.dumps(good))
    extra["data"][RECORD_MIME]["records"][0]["verdict"] = "pass"
    for payload in ("text", None, {"task": "m00.add"}, extra["data"][RECORD_MIME]):
        out = {"output_type": "display_data", "data": {RECORD_MIME: payload}}
        assert rescore(SOURCE, [out], SEED, 2).earned == 0


def test_answers_of_the_wrong_shape_are_wrong_not_fatal():
    assert rescore(SOURCE, [record(lambda a, b: {"sum": [a, b]})], SEED, 2).earned == 0


def test_the_worst_of_several_valid_records_counts():
    verdict = rescore(SOURCE, [record(), record(lambda a, b: None)], SEED, 2)
    assert verdict.earned == 0


def test_no_record_names_the_error_of_the_cell():
    timeout = {"output_type": "error", "ename": "CellTimeoutError", "evalue": "", "traceback": []}
    verdict = rescore(SOURCE, [timeout], SEED, 2)
    assert verdict.earned == 0 and "CellTimeoutError" in verdict.reason


def test_records_are_found_only_in_record_outputs():
    assert records.payloads([{"output_type": "stream", "name": "stdout", "text": RECORD_MIME}]) == []


# ---------------------------------------------------------------- intake
def write(path, nb):
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_intake_rejects_what_cannot_be_read(tmp_path):
    for i, text in enumerate(["", "{not json", "[1, 2]", json.dumps({"nbformat": 5, "cells": []})]):
        path = tmp_path / f"nb{i}.ipynb"
        path.write_text(text)
        reason = intake.admit(path)
        assert reason is not None and not path.exists()
        assert "0" in reason.ko and "0 points" in reason.en


def test_intake_repairs_duplicated_graded_cells(tmp_path):
    cell = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade": True, "grade_id": "t", "points": 1,
                                                                      "solution": False, "locked": True,
                                                                      "schema_version": 3, "task": False}})
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.cells.append(nbformat.from_dict(json.loads(json.dumps(cell))))  # same grade id, same cell id
    path = write(tmp_path / "dup.ipynb", nb)
    reason = intake.admit(path)
    fixed = nbformat.read(str(path), as_version=4)
    assert "duplicated graded cells" in reason.en
    assert ["nbgrader" in c.metadata for c in fixed.cells] == [False, True]
    assert len({c.id for c in fixed.cells}) == 2


def test_intake_leaves_a_good_notebook_alone(tmp_path):
    path = write(tmp_path / "ok.ipynb", nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]))
    assert intake.admit(path) is None and path.exists()


def test_records_displayed_as_json_text_keep_nan():
    """Checks display records as JSON text so NaN/inf never trigger jupyter_client's stderr warning."""
    import json
    from autograder.checks.core import RECORD_MIME
    from autograder.grading.records import payloads
    text = json.dumps({"task": "m00.x", "records": [{"case": 1, "answer": float("nan"), "error": None}]})
    out = [{"output_type": "display_data", "data": {RECORD_MIME: text}},
           {"output_type": "display_data", "data": {RECORD_MIME: "{not json"}}]
    decoded = payloads(out)
    assert decoded[0]["records"][0]["answer"] != decoded[0]["records"][0]["answer"]  # NaN survives
    assert decoded[1] is None


# ---------------------------------------------------------------- measurement tasks: the grader's observations
COUNT = 'check("m00.count", count_positive, points=1, hidden=True)'


def count_positive(xs):
    return sum(1 for x in xs if x > 0)


def observed_by_grader(n_cases, walls=(0.01, 0.01), answer=count_positive):
    """What the grader's referee keeps per case: the round answers sent while its clock ran, walls, references."""
    cases = cases_for(task("m00.count"), True, SEED)[:n_cases]
    return {f"m00.count|{i}": {"walls": list(walls), "reference": [None] * len(walls),
                               "rounds": [answer(case)] * len(walls)} for i, case in enumerate(cases)}


def test_measurement_records_are_rescored_with_what_the_grader_observed():
    out = record(count_positive, task_id="m00.count")  # its kernel's own referee filled in "observed"
    n = len(out["data"][RECORD_MIME]["records"])
    assert all(len(r["answer"]["observed"]["walls"]) == 2 for r in out["data"][RECORD_MIME]["records"])
    assert rescore(COUNT, [out], SEED, 1).earned == 0  # what the kernel says it observed counts for nothing
    assert rescore(COUNT, [out], SEED, 1, {}).earned == 0
    assert rescore(COUNT, [out], SEED, 1, observed_by_grader(n)).earned == 1
    some = {k: v for k, v in observed_by_grader(n).items() if not k.endswith("|0")}
    assert rescore(COUNT, [out], SEED, 1, some).earned == pytest.approx((n - 1) / n, abs=0.01)


def test_a_forged_observation_is_replaced_by_the_graders():
    cases = cases_for(task("m00.count"), True, SEED)
    forged = {"task": "m00.count", "points": 1, "hidden": True, "seed": SEED,
              "records": [{"case": c, "answer": {"rounds": [count_positive(c)] * 2,
                                                 "observed": {"walls": [9.0, 9.0], "reference": [None, None]}},
                           "error": None} for c in cases]}
    out = {"output_type": "display_data", "data": {RECORD_MIME: json.dumps(forged)}, "metadata": {}}
    assert rescore(COUNT, [out], SEED, 1, {}).earned == 0
    # the rounds scored are those the kernel sent while the grader's clock ran, whatever the record says
    wrong_live = observed_by_grader(len(cases), answer=lambda case: -1)
    assert rescore(COUNT, [out], SEED, 1, wrong_live).earned == 0
    assert rescore(COUNT, [out], SEED, 1, observed_by_grader(len(cases), walls=(0.01,))).earned == 1
    assert rescore(COUNT, [out], SEED, 1, observed_by_grader(len(cases))).earned == 1


def test_observations_apply_only_to_measurement_tasks():
    seen = {"m00.add|0": {"walls": [], "reference": []}}
    assert rescore(SOURCE, [record()], SEED, 2, seen).earned == 2
