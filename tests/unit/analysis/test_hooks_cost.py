"""The hooks' cost in place from the blocks of steps run without them: the clock spreads a block's
steps over it, the statistics leave them out, and each block's mean step against the hooked steps
around it gives the cost a step (analysis/hooks_cost.py); the account holds it."""

from __future__ import annotations

import random

import pytest

from gpubottle.analysis.hooks_cost import MIN_BLOCKS, in_place_cost, unhooked_blocks
from gpubottle.analysis.own_cost import hooks_s
from gpubottle.clock import StepClock
from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import InPlaceCost
from gpubottle.wire import ProbeCost, Unhooked

HOOKED, BARE, BLOCK = 0.00036, 0.00033, 150


def loop(n_blocks: int, rng: random.Random, abort_every: int = 0, busy: float = 0.0) -> ChildEvents:
    """Replayed events of a loop of HOOKED-s steps with a block of BLOCK steps of BARE s in every
    ten blocks, each step +-5% (a pause of 20 ms now and then, hooked or not); `busy`: the share of
    steps another program's 4-ms time slice lands in."""
    def step(mean: float) -> float:
        return (mean * rng.uniform(0.95, 1.05) + (0.004 if rng.random() < busy else 0.0)
                + (0.02 if rng.random() < 0.0002 else 0.0))

    ev = ChildEvents()
    ev.clock.optimizer_created(1)
    t = 10.0
    ev.clock.optimizer_step(1, t)
    for b in range(n_blocks):
        for _ in range(9 * BLOCK):
            t += step(HOOKED)
            ev.clock.optimizer_step(1, t)
        # The step-boundary probes before its pause: a few us, a look at the weights 3 ms.
        t += 0.003 if b == 0 else 0.000002
        t0 = t
        for _ in range(BLOCK):
            t += step(BARE)
        r = Unhooked(t0, t, BLOCK, bool(abort_every and b % abort_every == 0))
        ev.unhooked.append(r)
        ev.clock.unhooked(r.steps, r.t1)
    for _ in range(9 * BLOCK):
        t += step(HOOKED)
        ev.clock.optimizer_step(1, t)
    return ev


def test_the_clock_spreads_a_block_evenly_and_the_blocks_are_found_again():
    clock = StepClock(keep_times=True)
    clock.optimizer_created(1)
    for k in range(5):
        clock.optimizer_step(1, 1.0 + k)
    clock.unhooked(4, 9.0)  # four steps since 5.0, without records
    clock.optimizer_step(1, 10.0)
    assert clock.steps == 10
    iv = clock.intervals()
    assert [round(b - a, 6) for a, b in iv] == [1.0] * 9
    # From its pause: the first step also holds the step before's probes (a heavier one: 0.4 s).
    clock.unhooked(4, 14.4, began=10.4)
    assert [round(b - a, 6) for a, b in clock.intervals()[-4:]] == [1.4, 1.0, 1.0, 1.0]
    # (its pause 0.01 s after the step before's end: that step's probes ran 10 ms)
    assert unhooked_blocks(iv, [Unhooked(5.01, 9.0, 4)]) == [(4, 8, False, pytest.approx(3.99), False)]


def test_the_median_block_difference_is_the_cost_a_step():
    ev = loop(24, random.Random(1))
    iv = ev.clock.intervals()
    net = [b - a for a, b in iv]
    blocks = unhooked_blocks(iv, ev.unhooked)
    assert len(blocks) == 24 and all(b.i1 - b.i0 == BLOCK for b in blocks)
    m = in_place_cost(net, net, blocks, instrumented=[], warmup=10)
    assert m is not None and m.blocks == 24 and m.block_steps == BLOCK
    assert m.per_step_s == pytest.approx(HOOKED - BARE, abs=3e-6)  # 30 us, the pauses aside
    assert 0 < m.spread_s < 3e-6 and m.resolved
    assert m.step_s == pytest.approx(BARE, rel=0.02)
    assert m.hooked_steps == len(iv) - 24 * BLOCK


def test_steps_that_vary_more_than_the_hooks_cost_tell_nothing():
    """Other programs sharing the cores (beside two busy loops: -86 +- 133 us a step measured): not
    above the hooks' own clocks by twice its spread, the account keeps their own time."""
    ev = loop(24, random.Random(3), busy=0.1)
    iv = ev.clock.intervals()
    net = [b - a for a, b in iv]
    blocks = unhooked_blocks(iv, ev.unhooked)
    m = in_place_cost(net, net, blocks, [], 10, own_s=13e-6)
    assert m is not None and m.per_step_s - 2 * m.spread_s < 13e-6 and not m.resolved
    assert m.own_s == 13e-6
    ev = loop(24, random.Random(3))
    iv = ev.clock.intervals()
    net = [b - a for a, b in iv]
    quiet = in_place_cost(net, net, unhooked_blocks(iv, ev.unhooked), [], 10, own_s=13e-6)
    assert quiet is not None and quiet.resolved  # 30 us +- ~1 against 13
    ev.probe_cost = ProbeCost(per_call_s=0.0, calls=0, writer_cpu_s=0.0, hooks_s=0.2, timed=0)
    assert hooks_s(ev, m) == pytest.approx(0.2)


def test_aborted_blocks_and_too_few_blocks_measure_nothing():
    ev = loop(8, random.Random(2), abort_every=2)  # 4 aborted: 4 left, under MIN_BLOCKS
    iv = ev.clock.intervals()
    blocks = unhooked_blocks(iv, ev.unhooked)
    assert len(blocks) == 8 and MIN_BLOCKS > 4
    net = [b - a for a, b in iv]
    assert in_place_cost(net, net, blocks, [], 10) is None


def test_the_late_sparse_blocks_measure_nothing_and_are_told_apart():
    """From 15 s on the hooks run one block in ten (probes/unhooked.py): those blocks, nine tenths
    of the steps, have no hooked steps like them around and are no measurement of the hooks."""
    ev = loop(24, random.Random(1))
    ev.unhooked = [u._replace(sparse=True) for u in ev.unhooked]
    iv = ev.clock.intervals()
    net = [b - a for a, b in iv]
    blocks = unhooked_blocks(iv, ev.unhooked)
    assert len(blocks) == 24 and all(b.sparse for b in blocks)
    assert in_place_cost(net, net, blocks, instrumented=[], warmup=10) is None
    mixed = [b._replace(sparse=i >= 12) for i, b in enumerate(blocks)]
    m = in_place_cost(net, net, mixed, instrumented=[], warmup=10)
    assert m is not None and m.blocks == 12 and m.hooked_steps == len(iv) - 24 * BLOCK


def test_the_account_takes_the_cost_in_place_where_it_is_more_than_the_hooks_own_time():
    ev = ChildEvents()
    ev.probe_cost = ProbeCost(per_call_s=1e-6, calls=1100, writer_cpu_s=0.05, step_probes_s=0.01,
                              hooks_s=0.2, timed=1000)
    own = 0.2 + 0.01 + 100 * 1e-6 + 0.05
    assert hooks_s(ev) == pytest.approx(own)
    measured = InPlaceCost(per_step_s=30e-6, spread_s=2e-6, blocks=20, block_steps=150, hooked_steps=20000)
    assert hooks_s(ev, measured) == pytest.approx(0.6 + 100 * 1e-6 + 0.05)
    low = InPlaceCost(per_step_s=5e-6, spread_s=2e-6, blocks=20, block_steps=150, hooked_steps=20000)
    assert hooks_s(ev, low) == pytest.approx(own)  # (its own clocks are the floor)
    noisy = InPlaceCost(per_step_s=60e-6, spread_s=20e-6, blocks=20, block_steps=150, hooked_steps=20000,
                        step_s=300e-6, resolved=False)
    assert hooks_s(ev, noisy) == pytest.approx(own)


def test_the_trainings_timed_parts_stand_for_the_blocks_that_timed_nothing():
    """Input, backward and optimizer are timed by the hooks: over a block without them nothing is;
    the hooked spans' shares stand for the whole training, not the untimed rest."""
    from gpubottle.analysis.account import _train_parts

    # 10 s of training, 0.1-s steps each 20 ms input, 30 ms backward, 10 ms optimizer; a block
    # without hooks from 4 to 5 s, whose steps timed nothing.
    calls: dict[str, list[tuple[float, float]]] = {"input": [], "backward": [], "optimizer": []}
    for k in range(100):
        t = k * 0.1
        if 4.0 <= t < 5.0:
            continue
        calls["input"].append((t, t + 0.02))
        calls["backward"].append((t + 0.05, t + 0.08))
        calls["optimizer"].append((t + 0.08, t + 0.09))
    parts, _ = _train_parts(calls, [(0.0, 10.0)], 10.0, None, unhooked=[(4.0, 5.0)])
    assert parts["input"] == pytest.approx(2.0) and parts["backward"] == pytest.approx(3.0)
    assert parts["optimizer"] == pytest.approx(1.0)
    assert parts["forward and other code"] == pytest.approx(4.0)
    unscaled, _ = _train_parts(calls, [(0.0, 10.0)], 10.0, None)
    assert unscaled["input"] == pytest.approx(1.8)  # (what the blocks' time did to it before)


def test_the_steps_say_when_the_sparse_blocks_began():
    """The report says from when the hooks ran sparse (probes/unhooked.py: 15 s after the probes'
    install, or sooner once their measurement is done): seconds from the script's process start;
    and how sparse, where the records say (an older run's do not)."""
    from gpubottle.analysis.steps import step_evidence
    from gpubottle.wire import Start

    ev = loop(24, random.Random(2))
    ev.start = Start(pid=1, t=4.0, wall=0.0)
    ev.unhooked = [u._replace(sparse=i >= 12) for i, u in enumerate(ev.unhooked)]
    steps = step_evidence(ev)
    assert steps.thinned == 12 * BLOCK
    assert steps.thinned_from_s == round(float(ev.unhooked[12].t0) - 4.0, 1)
    assert steps.thinned_every is None
    ev.unhooked = [u._replace(every=38) if u.sparse else u for u in ev.unhooked]
    assert step_evidence(ev).thinned_every == 38
    ev.unhooked = [u._replace(sparse=False, every=None) for u in ev.unhooked]
    assert step_evidence(ev).thinned_from_s is None
