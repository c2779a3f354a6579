"""probes/zero_grads.py on real torch: the window wraps zero_grad for a few steps, records each
call with the user's line, puts the originals back, and costs nothing outside it."""

from __future__ import annotations

from pathlib import Path

import torch
from recorders import ListRecorder
from script_lines import line_of

from gpubottle.probes.zero_grads import WINDOW_FROM, WINDOW_STEPS, ZeroGradWindow
from gpubottle.wire import ZeroGrads


def test_the_window_records_both_zero_grads_and_puts_the_originals_back() -> None:
    opt_zero, module_zero = torch.optim.Optimizer.zero_grad, torch.nn.Module.zero_grad
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = ListRecorder()
    probe = ZeroGradWindow(rec)  # type: ignore[arg-type]
    for step in range(1, WINDOW_FROM + 1):
        probe.on_step(step)
    assert torch.optim.Optimizer.zero_grad is not opt_zero  # wrapped, in the window
    opt.zero_grad()  # the optimizer's
    model.zero_grad()  # the module's
    for step in range(WINDOW_FROM + 1, WINDOW_FROM + WINDOW_STEPS + 1):
        probe.on_step(step)
    assert torch.optim.Optimizer.zero_grad is opt_zero and torch.nn.Module.zero_grad is module_zero
    [w] = [r for r in rec.records if isinstance(r, ZeroGrads)]
    assert len(w.calls) == 2 and w.t0 <= w.calls[0][0] <= w.calls[1][0] <= w.t1
    here = Path(__file__)
    assert w.calls[0][1].endswith(f"test_zero_grad_window.py:{line_of(here, '# the optimizer')}")
    assert w.calls[1][1].endswith(f":{line_of(here, '# the module')}")
    opt.zero_grad()  # after the window: nothing recorded
    assert len(w.calls) == 2
    probe.finish(None)
    assert len([r for r in rec.records if isinstance(r, ZeroGrads)]) == 1


def test_a_run_that_ends_inside_the_window_still_reports_it_and_unwraps() -> None:
    opt_zero = torch.optim.Optimizer.zero_grad
    rec = ListRecorder()
    probe = ZeroGradWindow(rec)  # type: ignore[arg-type]
    for step in range(1, WINDOW_FROM + 1):
        probe.on_step(step)
    probe.finish(None)
    assert torch.optim.Optimizer.zero_grad is opt_zero
    assert [r for r in rec.records if isinstance(r, ZeroGrads)]


def _kept(clear: str) -> list | None:
    """A real loop of an MLP under SGD, clearing its gradients as `clear` says, with the window's
    steps told by the optimizer's steps as the probes see them; the window's `kept`."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = ListRecorder()
    probe = ZeroGradWindow(rec, [opt])  # type: ignore[arg-type]
    for step in range(1, WINDOW_FROM + WINDOW_STEPS + 2):
        if clear == "zero_grad":
            opt.zero_grad()
        elif clear == "zeros":
            opt.zero_grad(set_to_none=False)
        elif clear == "none":
            for p in model.parameters():
                p.grad = None
        model(torch.randn(4, 8)).pow(2).mean().backward()
        opt.step()
        probe.on_step(step)
    [w] = [r for r in rec.records if isinstance(r, ZeroGrads)]
    return w.kept


def test_gradients_no_one_clears_are_told_at_the_first_backward_after_a_step() -> None:
    """Without any clearing the window's first backward adds to the gradient the step before used
    (the backward's line recorded); zero_grad() either way, or p.grad = None by hand, is clearing."""
    line = line_of(Path(__file__), "model(torch.randn(4, 8)).pow(2).mean().backward()", whole=True)
    kept = _kept("nothing")
    assert kept is not None and kept[0] == 1 and kept[1].endswith(f"test_zero_grad_window.py:{line}"), kept
    assert [(_kept(c) or [None])[0] for c in ("zero_grad", "zeros", "none")] == [0, 0, 0]
    no_opt = ZeroGradWindow(ListRecorder(), [])  # type: ignore[arg-type]
    for step in range(1, WINDOW_FROM + WINDOW_STEPS + 1):
        no_opt.on_step(step)
    assert no_opt.kept is None  # no optimizer to watch: not told
