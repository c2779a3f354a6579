"""Evaluation with autograd on: the first forward after model.eval() on real torch modules
(probes/modes.py), the evaluations it makes of the run's events (analysis/eval_autograd.py) and
eval-autograd (rules/phases/eval_autograd.py)."""

from __future__ import annotations

import pytest
import torch
from factories import evidence
from recorders import ListRecorder
from torch import nn

from gpubottle import vocabulary as v
from gpubottle.analysis.eval_autograd import eval_autograd
from gpubottle.analysis.samples import Samples
from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import EvalAutograd
from gpubottle.probes.modes import install_modes
from gpubottle.rules import diagnose
from gpubottle.wire import Backward, End, EvalForward, MemSample, ModeSet


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> ListRecorder:
    monkeypatch.setattr(nn.Module, "train", nn.Module.train)  # restored after the test
    rec = ListRecorder()
    install_modes(rec, {})
    return rec


def _forwards(rec: ListRecorder) -> list[EvalForward]:
    return [r for r in rec.records if isinstance(r, EvalForward)]


def test_the_first_forward_after_eval_says_whether_autograd_recorded_it(recorded: ListRecorder):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(3, 4)

    def evaluate(grad: bool) -> None:
        model.eval()
        with torch.set_grad_enabled(grad):
            for _ in range(3):
                model(x)
        model.train()

    evaluate(True)
    evaluate(False)
    with torch.inference_mode():
        model.eval()
        model(x)
    model.train()
    model(x)  # training: nothing recorded
    first, second, third = _forwards(recorded)
    assert (first.grad, second.grad, third.grad) == (1, 0, 0)
    assert first.function == "evaluate" and first.site is not None and "test_eval_forward.py" in first.site
    # One record per eval(), the submodules' forwards included: the hook is gone after the first.
    assert not torch.nn.modules.module._global_forward_pre_hooks


def test_train_disarms_an_eval_with_no_forward_and_a_compiled_model_is_left_alone(recorded: ListRecorder):
    model = nn.Linear(4, 2)
    model.eval()
    model.train()  # eval() then train() with no forward between (a checkpoint written in eval mode)
    model(torch.randn(2, 4))
    assert _forwards(recorded) == [] and not torch.nn.modules.module._global_forward_pre_hooks

    class Compiled(nn.Module):  # what torch.compile returns: the module under _orig_mod
        def __init__(self) -> None:
            super().__init__()
            self._orig_mod = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self._orig_mod(x)  # type: ignore[no-any-return]

    c = Compiled()
    c.eval()
    assert not torch.nn.modules.module._global_forward_pre_hooks  # no hook to change dynamo's guards
    c(torch.randn(2, 4))
    assert _forwards(recorded) == []


def test_a_model_traced_after_eval_is_no_evaluation(recorded: ListRecorder):
    """model.eval() then torch.jit.trace (or torch.export, ONNX): the forward traces the model."""
    model = nn.Linear(4, 2)
    model.eval()
    with pytest.warns(DeprecationWarning):  # (torch 2.13 deprecates jit.trace; users still call it)
        torch.jit.trace(model, torch.randn(2, 4))
    model.train()
    assert _forwards(recorded) == [] and not torch.nn.modules.module._global_forward_pre_hooks


def _events(grad: int, backward: bool = False) -> tuple[ChildEvents, Samples]:
    """Four evaluations of 1 s, every 2 s from t = 10; in each, memory rises 300 MiB."""
    ev, s = ChildEvents(), Samples()
    for k in range(4):
        t = 10.0 + 2 * k
        ev.add(ModeSet(t, 0, "train.py:40", "evaluate", "train.py:70"))
        ev.add(EvalForward(t + 0.01, grad, "train.py:43", "evaluate"))
        if backward:
            ev.add(Backward(t + 0.5, t + 0.6))
        ev.add(ModeSet(t + 1.0, 1, "train.py:47", "evaluate", "train.py:70"))
        for dt, mib in ((-0.1, 500), (0.5, 650), (0.9, 800), (1.5, 500)):
            pss = mib << 20
            s.mem.append(MemSample(t + dt, {"7": [pss, pss]}, 8 << 30, 16 << 30, 0, None, None, None))
    ev.add(End("completed", None, 20.0))
    return ev, s


def test_evaluations_autograd_recorded_are_grouped_with_their_time_and_memory():
    ev, s = _events(1)
    [e] = eval_autograd(ev, s, 7, saves=[(12.2, 12.4)], wall=20.0, end=20.0)
    assert (e.function, e.site, e.passes) == ("evaluate", "train.py:43", 4)
    assert e.seconds == pytest.approx(3.8) and e.share == pytest.approx(0.19)  # less the save
    assert e.rise_bytes == 300 << 20
    assert eval_autograd(*_events(0), 7, [], 20.0, 20.0) == []  # under no_grad
    # A backward inside: the graphs were used (a frozen teacher in eval mode, saliency maps).
    assert eval_autograd(*_events(1, backward=True), 7, [], 20.0, 20.0) == []


def test_the_rise_counts_from_the_first_forward_not_from_eval():
    """An inference script calling model.eval() before building its 205-MiB dataset: that was said
    as the pass's rise ("rose 649 MiB within a pass"); only what rose after its first forward is."""
    ev, s = ChildEvents(), Samples()
    ev.add(ModeSet(10.0, 0, "infer.py:8", "<module>", None))
    ev.add(EvalForward(12.0, 1, "infer.py:12", "<module>"))
    for t, mib in ((9.9, 300), (11.0, 505), (11.9, 510), (14.0, 560), (16.0, 610)):
        s.mem.append(MemSample(t, {"7": [mib << 20, mib << 20]}, 8 << 30, 16 << 30, 0, None, None, None))
    ev.add(End("completed", None, 17.0))
    [e] = eval_autograd(ev, s, 7, saves=[], wall=17.0, end=17.0)
    assert e.rise_bytes == 100 << 20


def test_eval_autograd_is_said_with_its_line_and_as_a_try():
    ev = evidence(steps=50)
    ev.eval_autograd = [EvalAutograd("evaluate", "train.py:43", 4, 3.8, 0.19, 300 << 20)]
    f = next(f for f in diagnose(ev).findings if f.category == v.EVAL_AUTOGRAD)
    assert f.severity == "warning" and f.phase == "eval" and f.run_share is None
    assert f.summary.startswith("evaluate() runs the model with autograd on")
    [fix] = f.fixes
    assert fix.where == "train.py:43" and "torch.no_grad()" in fix.text and "try it" in fix.text
    assert fix.expected_step_s is None and fix.expected_run_s is None  # no number promised
    assert any("300 MiB" in x.text for x in f.evidence)
    # Small, and no memory to speak of: not said.
    ev.eval_autograd = [EvalAutograd("evaluate", "train.py:43", 4, 0.3, 0.02, 1 << 20)]
    assert not any(f.category == v.EVAL_AUTOGRAD for f in diagnose(ev).findings)


def test_a_loaders_iterator_arms_the_first_forward_where_the_script_never_calls_eval(
        recorded: ListRecorder):
    """arm_first_forward() (a DataLoader iterator started with gradients on): the next forward says
    whether autograd recorded it, once; the hook is gone after it."""
    from gpubottle.probes.modes import arm_first_forward

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    arm_first_forward()
    model(torch.randn(3, 4))
    model(torch.randn(3, 4))
    [f] = _forwards(recorded)
    assert f.grad == 1 and not torch.nn.modules.module._global_forward_pre_hooks


def test_a_loaders_evaluation_pass_with_autograd_on_is_an_evaluation_without_eval():
    """No ModeSet at all: the forward inside a DataLoader's evaluation pass (no backward in it)
    makes the entry, marked as not called by eval(); one inside a training pass does not."""
    ev, s = ChildEvents(), Samples()
    for k in range(3):
        t = 10.0 + 4 * k
        ev.add(EvalForward(t + 0.01, 1, "train.py:30", "<module>"))  # the training epoch's
        ev.add(Backward(t + 0.1, t + 0.2))
        ev.add(EvalForward(t + 2.01, 1, "train.py:36", "<module>"))  # the validation pass's
    ev.add(End("completed", None, 22.0))
    passes = [(10.0 + 4 * k + 2.0, 10.0 + 4 * k + 3.0) for k in range(3)]
    [e] = eval_autograd(ev, s, 7, [], 22.0, 22.0, loader_evals=passes)
    assert (e.site, e.passes, e.eval_called) == ("train.py:36", 3, False)
    assert e.seconds == pytest.approx(3.0)
    assert eval_autograd(ev, s, 7, [], 22.0, 22.0) == []  # without the loader's passes: none
    f = next(f for f in diagnose(_with(e)).findings if f.category == v.EVAL_AUTOGRAD)
    assert "never calls model.eval()" in f.evidence[0].text and "call model.eval()" in f.fixes[0].text


def _with(e: EvalAutograd):
    ev = evidence(steps=50)
    ev.eval_autograd = [e]
    return ev
