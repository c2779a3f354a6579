"""rules/compute/untimed.py: an inference or generation script with no training step, its time in
the model's forward: compute-bound, not start-up."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import AccountEntry, StackEvidence
from gpubottle.rules.compute.untimed import untimed_model
from gpubottle.rules.engine import diagnose


def _ev(forward: float = 0.95, grows: str | None = "gen.py:31", steps: int = 0):
    ev = evidence(steps=steps, loader=False)
    ev.run.duration_s = 6.0
    ev.stacks = StackEvidence(samples_main=60, main_phases={"data": 0.0, "forward": forward, "backward": 0.0,
                                                            "optimizer": 0.0, "other": 1 - forward},
                              main_model_call="gen.py:29", main_input_grows=grows)
    ev.account = [AccountEntry("startup", 5.6, 0.93, parts={"import torch": 1.1, "TinyLM.forward": 4.5},
                               part_sites={"TinyLM.forward": "gen.py:16"}),
                  AccountEntry("train", 0.0, 0.0), AccountEntry("teardown", 0.4, 0.07)]
    return ev


def test_a_generation_loop_is_compute_bound_with_the_cache_first_and_no_start_up_finding():
    [f] = untimed_model(_ev())
    assert f.category == v.COMPUTE_BOUND and "no training step was seen" in f.summary
    assert f.fixes[0].where == "gen.py:31" and "key/value cache" in f.fixes[0].text
    assert "gen.py:29" in f.fixes[0].text and f.fixes[1].where == "gen.py:29"
    report = diagnose(_ev())
    assert report.primary == v.COMPUTE_BOUND
    assert not [x for x in report.findings if x.category == v.STARTUP_BOUND], report.findings


def test_an_inference_loop_that_grows_nothing_gets_the_faster_math_alone():
    [f] = untimed_model(_ev(grows=None))
    [fix] = f.fixes
    assert fix.text.startswith("run the math faster") and fix.where == "gen.py:29"


def test_work_outside_a_model_or_a_run_with_steps_is_not_this():
    assert untimed_model(_ev(forward=0.3)) == []
    assert untimed_model(_ev(steps=50)) == []
    crashed = _ev()
    crashed.run.exception = "RuntimeError: mat1 and mat2 shapes cannot be multiplied"
    assert untimed_model(crashed) == []  # a training script that failed in its first forward


def test_an_inference_loop_feeding_one_row_a_call_is_told_to_batch_it_first():
    """infer_single.py's shape: `for r in records: model(r.unsqueeze(0))`, 100,000 calls (4.9 s;
    1.5 s at 256 rows a call): it read only "run the math faster"."""
    ev = _ev(grows=None)
    assert ev.stacks is not None
    ev.stacks.main_model_row_loop, ev.stacks.main_model_row_loop_text = "score.py:11", "for r in records:"
    [f] = untimed_model(ev)
    assert "called at gen.py:29 one row at a time in a Python loop (score.py:11)" in f.summary
    first, second = f.fixes
    assert first.where == "score.py:11" and "(`for r in records:`)" in first.text
    assert "model(X[i:i + 256])" in first.text and first.text.endswith("try it and time it")
    assert first.expected is None and second.text.startswith("run the math faster")
