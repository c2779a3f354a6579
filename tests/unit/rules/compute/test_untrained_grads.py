"""compute-bound where the step's backward computes gradients no optimizer uses, from made-up
evidence shaped like a measured run (a distillation: a 1.3M-element teacher called with autograd on
beside a 34k-element student, 300 steps 1.6-1.7 s; under no_grad 0.7 s). It read compute-bound with
`teacher = torch.compile(teacher)` among its fixes and nothing about the teacher's gradients."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import ModelCallCount, UntrainedGrads
from gpubottle.rules import diagnose


def _finding(untrained: list[UntrainedGrads]):
    ev = evidence(steps=50, step_s=0.0061, main=1.0, cores=1.0)
    ev.model_calls = ModelCallCount("Sequential", "distill.py:23", 1, 64, ["teacher", "student"],
                                    untrained=untrained)
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f


def _fixes(untrained: list[UntrainedGrads]) -> list:
    return _finding(untrained).fixes


def test_the_verdict_says_the_wasted_gradients_with_it() -> None:
    f = _finding([UntrainedGrads("teacher", "distill.py:23", 1_323_018, 34_186, True)])
    assert f.summary.endswith("the loop is compute-bound, and its backward also computes gradients "
                              "for 1,323,018 parameter elements of teacher that no optimizer "
                              "updates"), f.summary


def test_a_teachers_gradients_lead_with_no_grad_at_its_call() -> None:
    first = _fixes([UntrainedGrads("teacher", "distill.py:23", 1_323_018, 34_186, True)])[0]
    assert first.text.startswith("teacher (called at distill.py:23) runs with autograd on, and each "
                                 "step's backward computes gradients for its 1,323,018 parameter "
                                 "elements, 39x the 34,186 the optimizers train"), first.text
    assert "with torch.no_grad(): out = teacher(x)" in first.text
    assert "teacher.requires_grad_(False)" in first.text
    assert first.where == "distill.py:23" and not first.change and first.expected is None


def test_a_part_left_out_of_the_optimizer_is_frozen_and_a_small_one_not_said() -> None:
    first = _fixes([UntrainedGrads("model", "train.py:30", 2_112, 520, False)])[0]
    assert first.text.startswith("each step's backward computes gradients for 2,112 parameter elements "
                                 "of model (called at train.py:30) that no optimizer holds (4.1x the "
                                 "520 the optimizers train)"), first.text
    assert "p.requires_grad_(False)" in first.text
    small = _fixes([UntrainedGrads("ema", "train.py:31", 100, 520, True)])
    assert not any("autograd on" in x.text or "no optimizer" in x.text for x in small)


def test_a_network_whose_input_carries_gradients_is_frozen_never_put_under_no_grad() -> None:
    """A perceptual loss's feature network on the generator's output: no_grad would stop the
    generator's gradient; requires_grad_(False) keeps the path and drops the wasted gradients."""
    first = _fixes([UntrainedGrads("vgg", "train.py:40", 500_000, 100_000, True, True)])[0]
    assert first.text.startswith("vgg (called at train.py:40) takes an input that carries "
                                 "gradients"), first.text
    assert "vgg.requires_grad_(False) once" in first.text
    assert "torch.no_grad() would cut that path" in first.text and "out = vgg(x)" not in first.text


def test_a_layer_built_in_forward_is_its_own_finding_whatever_bounds_the_run() -> None:
    """A head built inside forward at every call (tests/unit/probes/test_model_calls.py records one):
    its weights never train, whatever their share of the optimizers' (here 0.1x, under the 0.25x that
    wasted gradients are said from) and whatever the verdict: untrained-layer, at the line that builds
    it, that line moved to __init__ as self.<its name>; compute-bound does not say it again."""
    from gpubottle.rules.compute.untrained_layers import untrained_layers

    built = UntrainedGrads("Linear", "net.py:17", 4_160, 40_000, True, True, built=True,
                           built_at="net.py:16", built_code="head = nn.Linear(64, 64)")
    teacher = UntrainedGrads("teacher", "net.py:30", 1_323_018, 40_000, True)
    f = _finding([teacher, built])
    assert [x.text.split(" (")[0] for x in f.fixes][:1] == ["teacher"], f.fixes
    assert "builds a new" not in f.summary
    ev = evidence(steps=50, step_s=0.0061, main=1.0, cores=1.0)
    ev.model_calls = ModelCallCount("Net", "train.py:23", 1, 64, ["model"], untrained=[teacher, built])
    [r] = untrained_layers(ev)
    assert r.category == v.UNTRAINED_LAYER and r.severity == "warning"
    assert r.summary == ("the forward builds a new Linear at every call (net.py:16): its 4,160 weights "
                         "start from fresh random values each step and never train"), r.summary
    [fix] = r.fixes
    assert fix.where == "net.py:16" and fix.text.startswith(
        "build it once, in the model's __init__ (self.head = nn.Linear(64, 64)), and call that in forward")
    assert fix.text.endswith("Now built at net.py:16, called at net.py:17")
    assert [f.category for f in diagnose(ev).findings].count(v.UNTRAINED_LAYER) == 1


def test_layers_in_a_plain_list_are_untrained_layers_never_told_to_freeze() -> None:
    """Three Linear layers a plain list keeps (the model does not register them): the optimizer never
    held them, so the fix registers them (nn.ModuleList) where the list is assigned; never the
    teacher's "freeze it", which would keep them random (said three times before, once per layer)."""
    from gpubottle.rules.compute.untrained_layers import untrained_layers

    listed = UntrainedGrads("Linear", "net.py:17", 197_376, 11_018, True, True, unregistered=True,
                            modules=3, holder="Net.hidden (a plain list)", held_at="net.py:11")
    ev = evidence(steps=50, step_s=0.0061, main=1.0, cores=1.0)
    ev.model_calls = ModelCallCount("Net", "train.py:23", 1, 128, ["model"], untrained=[listed])
    [f] = untrained_layers(ev)
    assert f.summary == ("3 Linear layers kept in Net.hidden (a plain list), called at net.py:17, are no "
                         "part of the model: no optimizer holds their 197,376 weights, so they never "
                         "train"), f.summary
    [fix] = f.fixes
    assert fix.where == "net.py:11" and fix.text.startswith(
        "register them in the model: self.hidden = nn.ModuleList(...) around what it holds")
    compute = next(x for x in diagnose(ev).findings if x.category == v.COMPUTE_BOUND)
    assert not any("requires_grad_(False) once" in x.text for x in compute.fixes), compute.fixes
