"""rules/compute/subnormal.py: steps that slowed once the optimizers' CPU values turned subnormal."""

from __future__ import annotations

import dataclasses

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import MathInUse, OptimizerWork, StepGrowth, SubnormalLook
from gpubottle.rules.compute.growth import slowing_steps
from gpubottle.rules.compute.subnormal import decide_subnormal, subnormal_math
from gpubottle.rules.engine import diagnose

CLEAN = SubnormalLook(t=1.0, step=512, sampled=28000, subnormal=0, kind=None, kind_share=0.0)
FOUND = SubnormalLook(t=3.0, step=937, sampled=28000, subnormal=4100, kind="exp_avg", kind_share=0.58)


def _ev(before: float = 0.003, after: float = 0.005, looks: tuple[SubnormalLook, ...] = (CLEAN, FOUND),
        steps: int = 1300):
    ev = evidence(steps=steps, step_s=before, main=1.9, tree=1.9, cores=2, torch_threads=2, loader=False)
    ev.steps.durations_s = [before] * 800 + [after] * (steps - 800)  # the values turn at ~800
    ev.run.duration_s = 9.0
    ev.subnormals = list(looks)
    ev.optimizer_work = OptimizerWork(cls="torch.optim.adam.Adam", site="train.py:23", tensors=6,
                                      impl="for-loop", can_fuse=True, step_s=0.0014)
    return ev


def test_steps_slowed_after_the_values_turned_are_named_with_the_flush_as_a_try() -> None:
    [f] = subnormal_math(_ev())
    assert f.category == v.SUBNORMAL_MATH
    assert "3.0 ms to 5.0 ms" in f.summary and "exp_avg" in f.summary
    # Against the steps before the clean look: from it on, the 500 steps after the values turned
    # at ~800, each 2 ms beyond the first pace, of 1298 measured steps' 4.9 s.
    d = decide_subnormal(_ev())
    assert d is not None and d.before_s == 0.003 and d.after_s == 0.005
    assert abs(d.extra_s - 500 * 0.002) < 1e-9
    assert abs(d.share - d.extra_s / (798 * 0.003 + 500 * 0.005)) < 1e-9
    [fix] = f.fixes
    assert fix.where == "train.py:23" and "torch.set_flush_denormal(True)" in fix.text
    assert "each thread's own mode" in fix.text
    assert "try it and time it" in fix.text and fix.expected is None and not fix.change
    assert "58%" in f.evidence[0].text and f.evidence[0].value == round(4100 / 28000, 4)


def test_no_finding_without_a_clean_look_before_or_a_slowdown_that_matters() -> None:
    assert decide_subnormal(_ev(looks=(FOUND,))) is None  # no reference: subnormal from the start
    assert decide_subnormal(_ev(looks=(CLEAN,))) is None  # none found
    assert decide_subnormal(_ev(after=0.0033)) is None  # 1.1x: under SUBNORMAL_SLOWDOWN
    few = dataclasses.replace(FOUND, step=1290)  # too few steps after the look
    assert decide_subnormal(_ev(looks=(CLEAN, few))) is None
    thin = dataclasses.replace(FOUND, subnormal=100)  # 0.4% of the sampled values
    assert decide_subnormal(_ev(looks=(CLEAN, thin))) is None


def test_a_script_that_flushes_already_or_a_cpu_that_cannot_is_offered_nothing() -> None:
    for detail in ("on", "unsupported"):
        ev = _ev()
        ev.math_in_use = [MathInUse(v.MATH_FLUSH_DENORMAL, detail, "train.py:3")]
        assert subnormal_math(ev) == []
    ev = _ev()
    ev.math_in_use = [MathInUse(v.MATH_FLUSH_DENORMAL, "off", "train.py:3")]  # turned off: no help
    assert subnormal_math(ev)


def test_a_cpu_timed_at_full_speed_on_them_reads_no_slowdown_as_theirs() -> None:
    """Steps that slowed after the values turned, on a CPU the probe timed computing on subnormals
    at full speed (an AMD EPYC: 0.98x; a VAE's steps went 1.8 -> 2.8 ms there for another reason):
    not said; the same timed slow (3.2x), said."""
    ev = _ev()
    ev.subnormals = [CLEAN, dataclasses.replace(FOUND, penalty=0.982)]
    assert decide_subnormal(ev) is None and subnormal_math(ev) == []
    ev.subnormals = [CLEAN, dataclasses.replace(FOUND, penalty=3.2)]
    assert [f.category for f in subnormal_math(ev)] == [v.SUBNORMAL_MATH]


def test_other_programs_taking_the_cores_are_not_read_as_subnormals() -> None:
    ev = _ev()
    assert ev.cpu is not None
    ev.cpu.outside_cores = 0.8
    assert subnormal_math(ev) == []


def test_it_explains_the_steps_growth_and_leads_compute_bounds_fixes() -> None:
    ev = _ev()
    ev.step_growth = StepGrowth(first_s=0.003, last_s=0.005, per_step_s=2e-6, base_s=0.003, rho=0.9,
                                by_epoch=False, steps=1300, extra_s=0.8, training_s=4.9, function="<module>",
                                location="train.py:30", kind=None, line_share=0.2, statement=None)
    assert slowing_steps(ev) == []  # no unexplained growth: subnormal-math says why
    ev.subnormals = [CLEAN]
    [growth] = slowing_steps(ev)
    assert growth.category == v.LOOP_OVERHEAD and growth.severity == "info"
    ev = _ev()
    report = diagnose(ev)
    assert report.primary == v.COMPUTE_BOUND
    compute = next(f for f in report.findings if f.category == v.COMPUTE_BOUND)
    assert "torch.set_flush_denormal(True)" in compute.fixes[0].text
    assert any(f.category == v.SUBNORMAL_MATH for f in report.findings)


def test_the_fix_goes_where_torch_is_imported_before_any_thread_computes() -> None:
    """The mode is each thread's: torch's threads take it when they start, so the line is the
    script's `import torch` where the probes saw it (else the optimizer's)."""
    ev = _ev()
    ev.torch_import_site = "train.py:2"
    [f] = subnormal_math(ev)
    assert f.fixes[0].where == "train.py:2" and "right after `import torch`" in f.fixes[0].text


def test_subnormal_weights_are_said_from_the_first_look_without_a_clean_one() -> None:
    """A checkpoint's weights that decayed below 1.2e-38 slow every forward from the first step:
    no clean look to hold the steps against, so the share of the weights decides (an inference
    loop's model, no optimizer)."""
    look = SubnormalLook(t=1.0, step=5, sampled=9000, subnormal=12, kind="parameters",
                         kind_share=0.0013, weights_share=0.0013)
    ev = _ev(looks=(look,), after=0.003)
    ev.optimizer_work = None
    ev.torch_import_site = "infer.py:9"
    [f] = subnormal_math(ev)
    assert f.category == v.SUBNORMAL_MATH and f.severity == "warning" and f.share is None
    assert "0.13% of the model's weights are subnormal" in f.summary
    [fix] = f.fixes
    assert fix.where == "infer.py:9" and "not measured here: try it and time it" in fix.text
    compute = next(x for x in diagnose(ev).findings if x.category == v.COMPUTE_BOUND)
    assert compute.fixes[0].where == "infer.py:9" and "set_flush_denormal" in compute.fixes[0].text
    ev.subnormals = [dataclasses.replace(look, weights_share=0.0005)]  # under SUBNORMAL_WEIGHTS_SHARE
    assert subnormal_math(ev) == []
    # A CPU the probe timed computing on them at full speed (an AMD EPYC host: 0.3-1.0x): nothing
    # to gain, nothing said; timed slow (an Intel host's 3x), said as before.
    ev.subnormals = [dataclasses.replace(look, penalty=0.998)]
    assert subnormal_math(ev) == []
    ev.subnormals = [dataclasses.replace(look, penalty=3.2)]
    assert [f.category for f in subnormal_math(ev)] == [v.SUBNORMAL_MATH]
    ev.subnormals = [look]
    ev.math_in_use = [MathInUse(v.MATH_FLUSH_DENORMAL, "on", "infer.py:10")]
    assert subnormal_math(ev) == []


def test_a_backward_whose_values_turned_subnormal_is_said_with_the_flush() -> None:
    """A GRU over 200 time steps: 14% of its backward's sampled outputs subnormal (none in the
    optimizer's tensors), each step 0.9 s; flushed, 0.11 s a backward (measured: the run 24.8 s ->
    4.0 s)."""
    look = SubnormalLook(t=2.0, step=6, sampled=6517098, subnormal=904423, kind="backward outputs",
                         kind_share=0.1388, penalty=24.1, backward=True)
    ev = _ev(looks=(look,), after=0.003)
    ev.torch_import_site = "gru.py:2"
    [f] = subnormal_math(ev)
    assert f.category == v.SUBNORMAL_MATH and "14% of the values the backward computes" in f.summary
    [fix] = f.fixes
    assert fix.where == "gru.py:2" and "set_flush_denormal(True)" in fix.text and "Try it" in fix.text
    compute = next(x for x in diagnose(ev).findings if x.category == v.COMPUTE_BOUND)
    assert "set_flush_denormal" in compute.fixes[0].text
    # A backward look is no clean look nor a found one for the optimizers' tensors' slowdown rule
    assert decide_subnormal(_ev(looks=(CLEAN, dataclasses.replace(look, subnormal=0, kind=None,
                                                                  kind_share=0.0)))) is None
    for quiet in (dataclasses.replace(look, subnormal=1000),  # 0.015%: under the share
                  dataclasses.replace(look, penalty=0.9)):  # this CPU at full speed on them
        ev.subnormals = [quiet]
        assert subnormal_math(ev) == []
    ev.subnormals = [look]
    ev.math_in_use = [MathInUse(v.MATH_FLUSH_DENORMAL, "on", "gru.py:3")]
    assert subnormal_math(ev) == []
