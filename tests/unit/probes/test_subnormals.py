"""probes/subnormals.py on real tensors and a real optimizer: what a look counts, when it looks,
and the script's own torch.set_flush_denormal calls (probes/math_modes.py)."""

from __future__ import annotations

import types

import pytest
import torch
from recorders import ListRecorder

from gpubottle.probes import subnormals as sub
from gpubottle.probes.hooks import StepHooks
from gpubottle.probes.math_modes import install_math_modes
from gpubottle.wire import MathMode, Subnormals

TINY = torch.finfo(torch.float32).tiny


def test_a_look_counts_subnormal_values_of_cpu_floating_tensors_only() -> None:
    half = torch.cat([torch.full((500,), TINY / 4), torch.ones(500)])  # 500 subnormal, 500 normal
    got = sub.count_subnormal([
        ("exp_avg", half),
        ("exp_avg", torch.zeros(100)),  # zeros are not subnormal
        ("parameters", torch.full((3,), 1e-310, dtype=torch.float64)),  # float64's own range
        ("parameters", torch.full((4,), 1e-40, dtype=torch.float64)),  # normal in float64
        ("gradients", None),
        ("step", torch.arange(5)),  # integers: nothing to count
        ("exp_avg_sq", torch.full((4, 6), TINY / 2).t()),  # not contiguous: left out, no copy made
        ("gradients", torch.full((3, 3), TINY / 2).to_sparse()),  # sparse (an embedding's): left out
    ])
    assert sorted(got) == [["exp_avg", 1100, 500], ["parameters", 7, 3]]


def test_a_large_tensor_is_sampled_evenly_not_read_whole() -> None:
    t = torch.ones(1000, 1000)
    t[:, ::4] = TINY / 8  # every fourth column died: a quarter of it (an even stride: none or all)
    state = torch.random.get_rng_state()
    [[kind, sampled, found]] = sub.count_subnormal([("parameters", t)])
    assert 0.9 * sub.SAMPLE < sampled <= sub.SAMPLE and abs(found / sampled - 0.25) < 0.05
    assert torch.equal(torch.random.get_rng_state(), state)  # the script's random stream untouched


def _trained() -> tuple[torch.optim.Optimizer, StepHooks]:
    model = torch.nn.Linear(8, 4)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(2, 8)).sum().backward()
    opt.step()
    hooks = StepHooks()
    hooks.optimizers.add(opt)
    return opt, hooks


def test_looks_follow_the_optimizers_state_at_steps_growing_by_half_and_on_the_clock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(sub.time, "monotonic", lambda: now[0])
    opt, hooks = _trained()
    rec = ListRecorder()
    probe = sub.SubnormalProbe(rec, hooks)  # type: ignore[arg-type]
    for step in range(1, 41):
        probe.on_step(step)
        now[0] += 0.01
    assert [r.step for r in rec.records] == [1, 2, 3, 5, 8, 12, 18, 27]
    kinds = {g[0] for g in rec.records[0].groups}
    assert kinds == {"parameters", "gradients", "exp_avg", "exp_avg_sq", "step"}
    now[0] += sub.interval_s(0.0)  # the clock's look, between the steps' ones
    probe.on_step(41)
    assert rec.records[-1].step == 41
    p = opt.param_groups[0]["params"][0]
    opt.state[p]["exp_avg"].fill_(TINY / 3)
    probe.on_step(64)
    [found] = [g for g in rec.records[-1].groups if g[0] == "exp_avg"]
    assert found[2] == p.numel() and isinstance(rec.records[-1], Subnormals)


def test_a_model_of_many_tensors_is_looked_at_across_the_whole_model(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = torch.nn.Sequential(*[torch.nn.Linear(2, 2) for _ in range(100)])  # 200 parameters
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hooks = StepHooks()
    hooks.optimizers.add(opt)
    seen: list[list[tuple[str, object]]] = []
    monkeypatch.setattr(sub, "count_subnormal", lambda ts: seen.append(ts) or [["parameters", 1, 0]])
    probe = sub.SubnormalProbe(ListRecorder(), hooks)  # type: ignore[arg-type]
    probe.on_step(1)
    probe.on_step(2)
    index = {id(p): i for i, p in enumerate(model.parameters())}
    first = [index[id(t)] for k, t in seen[0] if k == "parameters"]
    assert 0.8 * sub.MAX_PARAMS <= len(first) <= sub.MAX_PARAMS
    assert len(seen[0]) == 2 * len(first)  # each with its gradient
    assert first[0] < 10 and first[-1] > 190  # spread, not the first layers only
    assert {id(t) for _, t in seen[0]}.isdisjoint({id(t) for _, t in seen[1] if t is not None})


def test_two_looks_in_a_row_that_take_too_long_end_the_looking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The look's own CPU (thread_time): a look the scheduler paused is not slow."""
    _, hooks = _trained()
    cpu = iter([0.0, 1.0, 1.0, 1.01, 2.0, 3.0, 3.0, 4.0])  # slow, fast, slow, slow
    monkeypatch.setattr(sub.time, "thread_time", lambda: next(cpu))
    rec = ListRecorder()
    probe = sub.SubnormalProbe(rec, hooks)  # type: ignore[arg-type]
    for step in (1, 2, 3, 5, 8, 12):
        probe.on_step(step)
    assert [r.step for r in rec.records] == [1, 2, 3, 5]


def test_the_scripts_flush_denormal_calls_are_recorded_with_their_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cls = torch.amp.autocast_mode.autocast
    monkeypatch.setattr(cls, "__init__", cls.__init__)  # the install wraps it: undone after
    calls: list[bool] = []
    stand_in = types.SimpleNamespace(amp=torch.amp, compile=lambda m, **kw: m,
                                     set_flush_denormal=lambda mode: calls.append(mode) or True)
    rec, status = ListRecorder(), {}
    install_math_modes(rec, stand_in, status)
    assert status == {"math-modes": None}
    assert stand_in.set_flush_denormal(True) is True
    stand_in.set_flush_denormal(False)
    got = [(r.kind, r.detail) for r in rec.records if isinstance(r, MathMode)]
    assert got == [("flush-denormal", "on"), ("flush-denormal", "off")] and calls == [True, False]
    assert all("test_subnormals.py" in (r.site or "") for r in rec.records)


def test_without_an_optimizer_the_called_models_weights_are_looked_at_once_each() -> None:
    """An inference loop: the model the loop calls (model_calls puts it in StepHooks.models) has
    its parameters looked at; beside an optimizer, a parameter it holds is not counted twice."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    with torch.no_grad():
        model[0].weight[0, 0] = TINY / 3
    hooks = StepHooks()
    hooks.models.add(model)
    rec = ListRecorder()
    probe = sub.SubnormalProbe(rec, hooks)  # type: ignore[arg-type]
    probe.on_step(1)
    assert rec.records[-1].groups == [["parameters", 30, 1]]
    opt = torch.optim.SGD(model[0].parameters(), lr=0.1)  # holds the first layer's two tensors
    hooks.optimizers.add(opt)
    probe.on_step(2)
    [params] = [g for g in rec.records[-1].groups if g[0] == "parameters"]
    assert params == ["parameters", 30, 1]


def test_one_backward_is_looked_into_and_its_subnormal_outputs_counted() -> None:
    """Gradients that shrink through the graph turn subnormal where no tensor the optimizer holds
    does (a GRU's over 200 time steps: 13% of its backward's outputs). Once, after BACKWARD_STEP,
    the next backward() runs under a counting mode: recorded as its own look and as perturbed, and
    torch.autograd.backward is the script's again after that one call."""
    import torch.autograd as ag

    from gpubottle.wire import Perturbed

    _, hooks = _trained()
    rec = ListRecorder()
    probe = sub.SubnormalProbe(rec, hooks)  # type: ignore[arg-type]
    before = ag.backward
    for step in range(1, sub.BACKWARD_STEP):
        probe.on_step(step)
        assert ag.backward is before
    wake = probe.on_step(sub.BACKWARD_STEP)
    assert ag.backward is not before and wake[1] < float("inf")  # (the second look's time)
    x = torch.ones(64, requires_grad=True)
    # (each factor normal; the gradient 1e-20 * 1e-20 is not: the backward's own values)
    ((x * 1e-20) * 1e-20).sum().backward()
    assert ag.backward is before
    assert x.grad is not None and int(((x.grad != 0) & (x.grad.abs() < TINY)).sum()) == 64
    looks = [r for r in rec.records if isinstance(r, Subnormals) and r.groups[0][0] == sub.BACKWARD_KIND]
    [look] = looks
    [[_, sampled, found]] = look.groups
    assert look.step == sub.BACKWARD_STEP + 1 and found >= 64 and found / sampled > 0.1
    assert any(isinstance(r, Perturbed) and r.what == "subnormal-backward" for r in rec.records)
    # A clean backward counts none; the next one after it is the script's own, unlooked at.
    n = len(rec.records)
    x.sum().backward()
    assert len(rec.records) == n


def test_a_second_backward_look_comes_on_the_clock_and_none_on_a_gpu_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.autograd as ag

    now = [100.0]
    monkeypatch.setattr(sub.time, "monotonic", lambda: now[0])
    _, hooks = _trained()
    probe = sub.SubnormalProbe(ListRecorder(), hooks)  # type: ignore[arg-type]
    before = ag.backward
    try:
        probe.on_step(sub.BACKWARD_STEP)
        assert ag.backward is not before
        ag.backward = before  # (as if that backward ran)
        now[0] += sub.BACKWARD_AGAIN_S - 1
        probe.on_step(sub.BACKWARD_STEP + 100)
        assert ag.backward is before
        now[0] += 1
        probe.on_step(sub.BACKWARD_STEP + 101)
        assert ag.backward is not before
        ag.backward = before
        now[0] += 10 * sub.BACKWARD_AGAIN_S
        probe.on_step(sub.BACKWARD_STEP + 5000)
        assert ag.backward is before  # two looks a run
        # GPUs compute on subnormals at full speed: a run that uses CUDA gets no look
        monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
        probe = sub.SubnormalProbe(ListRecorder(), hooks)  # type: ignore[arg-type]
        probe.on_step(sub.BACKWARD_STEP)
        assert ag.backward is before
    finally:
        ag.backward = before


def test_a_backward_of_many_ops_is_counted_for_its_first_ones_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sub, "BACKWARD_MAX_OPS", 3)
    mode = sub._dispatch_counter()
    x = torch.full((8,), TINY / 4)
    with mode:
        for _ in range(6):
            x = x * 1.0
    assert mode.ops == 3 and mode.counts == [24, 24]
