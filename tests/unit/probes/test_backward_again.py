"""Backward run again through one forward, from real torch modules in a counted step
(probes/model_calls.py): two losses over a shared trunk backpropagated one by one
(retain_graph=True) are two passes over the trunk's one call; their sum backpropagated once, micro-
batches accumulated (a forward each), and a GAN's two optimizers are not recorded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from recorders import ListRecorder

from gpubottle.probes.model_calls import COUNT_STEP, ModelCallCounter
from gpubottle.wire import ModelCalls

Nets = tuple[torch.nn.Module, torch.nn.Module, torch.nn.Module]


def _nets() -> Nets:
    torch.manual_seed(0)
    return (torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32)),
            torch.nn.Linear(32, 3), torch.nn.Linear(32, 1))


def _counted(opts: list[torch.optim.Optimizer], body: Callable[[], None]) -> ModelCalls:
    rec = ListRecorder()
    probe = ModelCallCounter(rec, None, opts)  # type: ignore[arg-type]
    for step in range(1, COUNT_STEP + 1):
        probe.on_step(step)
    body()
    probe.on_step(COUNT_STEP + 1)
    probe.on_step(COUNT_STEP + 2)
    assert not probe.handles and not probe.grad_handles  # removed
    [calls] = [r for r in rec.records if isinstance(r, ModelCalls)]
    return calls


def _losses(nets: Nets, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    trunk, head_a, head_b = nets
    feats = trunk(x)
    return head_a(feats).pow(2).mean(), head_b(feats).abs().mean()


def test_two_losses_backpropagated_one_by_one_are_two_passes_over_the_trunks_one_forward() -> None:
    nets = _nets()
    opt = torch.optim.SGD([p for n in nets for p in n.parameters()], lr=0.1)

    def step() -> None:
        loss_a, loss_b = _losses(nets, torch.randn(8, 16))
        opt.zero_grad()
        loss_a.backward(retain_graph=True)  # pass 1
        loss_b.backward()  # pass 2
        opt.step()

    calls = _counted([opt], step)
    assert calls.again is not None, calls
    name, site, forward, passes, elements, sites = calls.again
    assert (name, forward, passes) == ("trunk", 1, 2), calls.again
    assert elements == sum(p.numel() for p in nets[0].parameters())
    lines = Path(__file__).read_text().splitlines()
    want = [next(i for i, t in enumerate(lines, 1) if t.endswith(f"# pass {k}")) for k in (1, 2)]
    assert len(sites) == 2 and all(s is not None and s.endswith(f"test_backward_again.py:{n}")
                                   for s, n in zip(sites, want)), sites
    assert site is not None and "test_backward_again.py" in site


def test_a_sum_micro_batches_or_two_optimizers_are_not_recorded() -> None:
    nets = _nets()
    opt = torch.optim.SGD([p for n in nets for p in n.parameters()], lr=0.1)

    def summed() -> None:
        loss_a, loss_b = _losses(nets, torch.randn(8, 16))
        opt.zero_grad()
        (loss_a + loss_b).backward()
        opt.step()

    def micro_batches() -> None:  # gradient accumulation: a forward for each backward
        opt.zero_grad()
        for _ in range(3):
            loss_a, loss_b = _losses(nets, torch.randn(8, 16))
            (loss_a + loss_b).backward()
        opt.step()

    assert _counted([opt], summed).again is None
    assert _counted([opt], micro_batches).again is None
    # A GAN-like step: each network's optimizer; the first loss's graph kept for the second.
    trunk, head_a, head_b = _nets()
    opt_t = torch.optim.SGD(trunk.parameters(), lr=0.1)
    opt_h = torch.optim.SGD([*head_a.parameters(), *head_b.parameters()], lr=0.1)

    def two_optimizers() -> None:
        loss_a, loss_b = _losses((trunk, head_a, head_b), torch.randn(8, 16))
        opt_h.zero_grad()
        loss_a.backward(retain_graph=True)
        opt_h.step()
        opt_t.zero_grad()
        loss_b.backward()
        opt_t.step()

    assert _counted([opt_t, opt_h], two_optimizers).again is None


def test_hooks_on_the_parameters_are_gone_after_the_counted_step() -> None:
    nets = _nets()
    opt = torch.optim.SGD([p for n in nets for p in n.parameters()], lr=0.1)

    def step() -> None:
        loss_a, loss_b = _losses(nets, torch.randn(8, 16))
        opt.zero_grad()
        loss_a.backward(retain_graph=True)
        loss_b.backward()
        opt.step()

    rec = ListRecorder()
    probe = ModelCallCounter(rec, None, [opt])  # type: ignore[arg-type]
    for n in range(1, COUNT_STEP + 1):
        probe.on_step(n)
    step()
    counted = dict(probe.accumulated)
    assert max(counted.values()) == 2
    probe.on_step(COUNT_STEP + 1)
    step()  # after the counted step: nothing counts
    assert probe.accumulated in ({}, counted) and not probe.grad_handles


def test_an_error_in_the_counting_never_reaches_the_scripts_backward(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import gpubottle.probes.model_calls as mc

    in_backward = {"on": False}
    site = mc.caller_site

    def broken() -> str | None:
        if in_backward["on"]:  # (the forward's own calls of it stay as they are)
            raise RuntimeError("no frames")
        return site()

    monkeypatch.setattr(mc, "caller_site", broken)
    nets = _nets()
    opt = torch.optim.SGD([p for n in nets for p in n.parameters()], lr=0.1)

    def step() -> None:
        loss_a, loss_b = _losses(nets, torch.randn(8, 16))
        opt.zero_grad()
        in_backward["on"] = True
        loss_a.backward(retain_graph=True)  # would raise here if the hook let the error out
        loss_b.backward()
        in_backward["on"] = False
        opt.step()

    calls = _counted([opt], step)
    assert calls.again is not None and calls.again[3] == 2  # the passes still counted
