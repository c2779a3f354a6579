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
