"""The blocks of steps run without hooks (probes/unhooked.py), on a fake clock: when they start, how
long they run, what they tell the step clock and the event file, and when they stay off."""

from __future__ import annotations

import random
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpubottle.clock import StepClock
from gpubottle.collect.events import read_events
from gpubottle.probes import unhooked
from gpubottle.probes.hooks import StepHooks
from gpubottle.probes.recorder import EarlyStop, Recorder, Stopper


class Loop:
    """A loop of one optimizer's steps of `step_s` (plus `noise()` where given) on a fake clock, its
    hooks timing `own_s` a step and costing it `cost_s` in place, driven as torch_hooks.py drives
    the probes: the post-step hook records and steps the clock while the hooks are on, and only
    ticks the probe while a block runs."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch, step_s: float, own_s: float,
                 steps: int | None = None, cuda: bool = False, cost_s: float = 0.0,
                 noise: Callable[[], float] | None = None) -> None:
        self.t = 1000.0
        monkeypatch.setattr(unhooked, "_monotonic", lambda: self.t)
        monkeypatch.setattr(unhooked, "wake_in", lambda s: (sys.maxsize, self.t + s))
        fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: cuda))
        monkeypatch.setitem(sys.modules, "torch", fake)
        self.path = tmp / "events.jsonl"
        self.recorder = Recorder(str(self.path), start_thread=False)
        self.clock = StepClock(keep_times=True)
        self.stopper = Stopper(self.recorder, self.clock, steps, None)
        self.hooks = StepHooks()
        self.off = unhooked.HooksOff(self.recorder, self.stopper, self.hooks)
        self.hooks.off = self.off
        self.off.started = float("inf")  # (no sparse blocks unless a test asks: _from_start)
        monkeypatch.setattr(unhooked, "SPARSE_FROM_S", float("inf"))
        self.step_s, self.own_s, self.cost_s, self.noise = step_s, own_s, cost_s, noise
        self.clock.optimizer_created(1)
        self.due: tuple[int, float] = (0, 0.0)
        self.recorded = 0
        self.ticked = 0

    def step(self, gap: float = 0.0) -> None:
        """One step; `gap`: seconds of the script's own work before it ends (a sort at an epoch's
        start)."""
        self.t += self.step_s + gap + (self.noise() if self.noise is not None else 0.0)
        if not self.recorder.hot_on:
            if not self.off.off:
                return
            self.ticked += 1
            if not self.off.tick():
                return
            self.ticked -= 1  # a long gap: the block ended before it, and it is recorded
        self.t += self.cost_s
        self.recorded += 1
        self.recorder.hooks_s += self.own_s
        done = self.clock.optimizer_step(1, self.t)
        if done:
            self.hooks.steps += 1
            due = self.hooks._due.get(id(self.off), self.due)  # (as the hub keeps it: sooner())
            if self.hooks.steps >= due[0] or self.t >= due[1]:
                wake = self.off.on_step(self.hooks.steps)
                self.due = (self.hooks.steps + 1, float("inf")) if wake is None else wake
                self.hooks._due[id(self.off)] = self.due
        if self.stopper.armed:
            self.stopper.check(done)

    def into_block(self, steps: int = 0) -> None:
        """Step until a block begins, then `steps` steps into it."""
        while not self.off.off:
            self.step()
        for _ in range(steps):
            self.step()

    def records(self) -> list[Any]:
        self.recorder.close()
        return read_events(str(self.path)).unhooked


def test_short_steps_whose_hooks_take_a_point_run_blocks_without_them(tmp_path, monkeypatch):
    # Hooks 5% of a 0.4-ms step by their clocks, 10% in place: told apart at once, so measured on.
    loop = Loop(tmp_path, monkeypatch, step_s=0.00036, own_s=0.00002, cost_s=0.00004)
    for _ in range(60000):
        loop.step()
    block = round(unhooked.BLOCK_S / 0.0004)
    blocks = loop.records()
    assert block == 150 and len(blocks) > unhooked.FIRST_BLOCKS
    later = blocks[unhooked.FIRST_BLOCKS - 1:]  # then one in LATER_EVERY
    assert all(b2.t0 - b1.t0 > block * unhooked.LATER_EVERY * 0.00036 for b1, b2 in zip(later, later[1:]))
    assert not loop.off.settled
    assert all(b.steps == block and not b.aborted for b in blocks)
    assert [round((b.t1 - b.t0) / 0.00036) for b in blocks] == [block] * len(blocks)
    # One block in EVERY_BLOCKS: the next begins 10 blocks of steps after the last began.
    gaps = {round(b2.t0 - b1.t0, 6) for b1, b2 in zip(blocks, blocks[1:unhooked.FIRST_BLOCKS])}
    assert gaps == {round(block * 0.00036 + block * (unhooked.EVERY_BLOCKS - 1) * 0.0004, 6)}
    # Every step counted, by the clock and by the hub, recorded or not.
    assert loop.clock.steps == loop.hooks.steps == 60000 == loop.recorded + loop.ticked
    assert loop.ticked == block * len(blocks)
    # The first block after START_STEPS steps and START_S of them.
    assert blocks[0].t0 - 1000.0 >= unhooked.START_S


def test_hooks_under_a_point_of_the_step_or_cuda_or_two_optimizers_run_none(tmp_path, monkeypatch):
    for kw in ({"own_s": 0.000003}, {"own_s": 0.00002, "cuda": True}):
        loop = Loop(tmp_path, monkeypatch, step_s=0.0004, **kw)  # type: ignore[arg-type]
        for _ in range(6000):
            loop.step()
        assert loop.records() == [] and loop.recorded == 6000
    loop = Loop(tmp_path, monkeypatch, step_s=0.0004, own_s=0.00002)
    loop.clock.optimizer_created(2)  # a GAN's: the post-step hook could not tell its steps
    for _ in range(6000):
        loop.step()
    assert loop.records() == []


def test_steps_stop_where_they_would_have_inside_a_block(tmp_path, monkeypatch):
    loop = Loop(tmp_path, monkeypatch, step_s=0.0004, own_s=0.00002, steps=2600)
    with pytest.raises(EarlyStop):
        for _ in range(10000):
            loop.step()
    assert loop.clock.steps == 2600 == loop.recorded + loop.ticked
    blocks = loop.records()
    assert blocks and blocks[-1].steps <= 150


def test_a_phase_beginning_ends_the_block_early_and_says_so(tmp_path, monkeypatch):
    loop = Loop(tmp_path, monkeypatch, step_s=0.0004, own_s=0.00002)
    loop.into_block(40)
    loop.hooks.phase()  # an epoch's iter(), an evaluation pass
    assert loop.recorder.hot_on and not loop.off.off
    for _ in range(10):
        loop.step()
    (b,) = loop.records()
    assert b.steps == 40 and b.aborted and b.t1 - b.t0 == pytest.approx(40 * 0.0004)
    assert loop.clock.steps == loop.recorded + loop.ticked


def test_the_script_ending_inside_a_block_still_tells_its_steps(tmp_path, monkeypatch):
    loop = Loop(tmp_path, monkeypatch, step_s=0.0004, own_s=0.00002)
    loop.into_block(5)
    loop.off.finish(None)  # the hub's last word, before the recorder closes
    (b,) = loop.records()
    assert b.steps == 5 and b.aborted and not loop.recorder.hot_on  # (closed: stays off)


def test_a_block_takes_the_wrappers_out_and_puts_them_back(tmp_path, monkeypatch):
    """While a block runs the wrappers' originals are in place and the pre-step hook is out of
    torch's table (a wrapper that only tests the flag still costs a frame a call); after it, as
    before. One the script patched over meanwhile is left as the script made it."""
    loop = Loop(tmp_path, monkeypatch, step_s=0.0004, own_s=0.00002)

    def original() -> None: ...

    def wrapper() -> None: ...

    def theirs() -> None: ...

    owner = types.SimpleNamespace(fn=wrapper, other=wrapper)
    table = {7: "gpubottle's pre-step hook", 8: "the script's"}
    loop.off.unwrap_with(owner, "fn", original)
    loop.off.unwrap_with(owner, "other", original)
    loop.off.drop_during(table, 7)
    owner.other = theirs  # the script wraps it again after gpubottle did
    loop.into_block()
    assert owner.fn is original and owner.other is theirs and table == {8: "the script's"}
    while loop.off.off:
        loop.step()
    assert owner.fn is wrapper and owner.other is theirs
    assert table == {8: "the script's", 7: "gpubottle's pre-step hook"}


def test_an_optimizer_built_after_the_blocks_began_ends_them(tmp_path, monkeypatch):
    """Its steps and the first's would both tick a block: the clock's steps could not be told."""
    loop = Loop(tmp_path, monkeypatch, step_s=0.0004, own_s=0.00002)
    loop.into_block()
    while loop.off.off:
        loop.step()
    loop.clock.optimizer_created(2)
    for _ in range(10000):
        loop.step()
    assert len(loop.records()) == 1


def test_blocks_that_cannot_tell_the_cost_from_the_hooks_clocks_go_to_one_in_a_hundred_early(
        tmp_path, monkeypatch):
    """Steps that vary by far more than the hooks cost (other threads on the cores), or hooks that
    cost in place what their clocks say: after SETTLE_BLOCKS blocks compared, FIRST_BLOCKS would
    not resolve it, and the blocks go to one in LATER_EVERY."""
    rng = random.Random(3)
    noisy = {"step_s": 0.0002, "cost_s": 0.00004, "noise": lambda: rng.expovariate(1 / 0.0006)}
    plain = {"step_s": 0.00038, "cost_s": 0.00002}
    for i, kw in enumerate((noisy, plain)):
        (tmp_path / str(i)).mkdir()
        loop = Loop(tmp_path / str(i), monkeypatch, own_s=0.00002, **kw)  # type: ignore[arg-type]
        for _ in range(60000):
            loop.step()
        blocks = loop.records()
        assert loop.off.settled, len(blocks)
        first = unhooked.SETTLE_BLOCKS + 1  # (the last one compared against the steps after it)
        assert first <= len(blocks) < unhooked.FIRST_BLOCKS
        step = loop.off.block
        gaps = [b2.t0 - b1.t0 for b1, b2 in zip(blocks[first:], blocks[first + 1:])]
        assert all(g > step * unhooked.LATER_EVERY * 0.0003 for g in gaps)
        assert loop.clock.steps == loop.recorded + loop.ticked


SPARSE_FROM_S = unhooked.SPARSE_FROM_S


def _from_start(loop: Loop, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probes installed (or the profile() begun) at the loop's first moment."""
    loop.off.started = loop.t
    monkeypatch.setattr(unhooked, "SPARSE_FROM_S", SPARSE_FROM_S)


def _sparse_by_now(loop: Loop, monkeypatch: pytest.MonkeyPatch, steps: int) -> None:
    """From the loop's start, `steps` steps (long enough for the sparse blocks to have begun), then
    on to the end of the block running then."""
    _from_start(loop, monkeypatch)
    for _ in range(steps):
        loop.step()
    assert loop.off.sparse
    while loop.off.off:
        loop.step()


def test_hooks_under_a_point_of_the_step_run_one_block_in_ten_5_s_after_the_decision(tmp_path, monkeypatch):
    """5-ms steps whose hooks time 25 us (0.5%: not measured) but cost a loop beside 16 Python
    threads ~3% in place: SPARSE_FROM_S after the blocks were decided on (nothing to measure), 17
    steps in 18 run without them (the hooks guessed at IN_PLACE_GUESS times their clocks, 1.75% of
    a step, held to SPARSE_COST), counted; every step is still counted by the clock and the hub."""
    loop = Loop(tmp_path, monkeypatch, step_s=0.005, own_s=0.000025)
    _from_start(loop, monkeypatch)
    for _ in range(6000):  # 30 s
        loop.step()
    loop.off.finish(None)
    blocks = loop.records()
    every = unhooked.sparse_every(0.005, 0.000025, None)
    assert every == 18
    block = round(unhooked.SPARSE_CYCLE_S / every / 0.005)  # 7 (no BLOCK_MIN: nothing is measured)
    assert blocks and all(b.sparse for b in blocks)
    assert not any(b.aborted for b in blocks[:-1])  # (the last one still running at the end)
    decided = loop.off._decided
    assert decided - 1000.0 >= unhooked.START_S  # (1 s and 300 steps of the loop first)
    assert blocks[0].t0 - decided >= unhooked.SPARSE_FROM_S
    assert blocks[0].t0 - decided < unhooked.SPARSE_FROM_S + 0.01  # at once, not a block later
    assert all(b.steps == block * (every - 1) for b in blocks[:-1])
    assert blocks[-1].steps <= block * (every - 1)
    gaps = {round((b2.t0 - b1.t0) / 0.005) for b1, b2 in zip(blocks, blocks[1:])}
    assert gaps == {block * every}
    assert loop.clock.steps == loop.hooks.steps == 6000 == loop.recorded + loop.ticked
    late = (1030.0 - blocks[0].t0) / 0.005
    assert 0.9 * late < loop.ticked < 0.97 * late  # 17 in 18 of the steps from then on


def test_measured_blocks_give_way_to_the_sparse_ones_once_measured(tmp_path, monkeypatch):
    """0.36-ms steps whose hooks cost ~15% in place: FIRST_BLOCKS measured (one in EVERY_BLOCKS,
    ~6 s), then sparse, not at 15 s, hooked one step in SPARSE_MAX_EVERY (one in 10 would carry 1.5%
    of the run), in cycles as long as one in 10's."""
    loop = Loop(tmp_path, monkeypatch, step_s=0.00036, own_s=0.00002, cost_s=0.00004)
    _from_start(loop, monkeypatch)
    for _ in range(60000):  # ~24 s
        loop.step()
    loop.off.finish(None)  # (a block still running tells its steps)
    blocks = loop.records()
    measured = [b for b in blocks if not b.sparse]
    late = [b for b in blocks if b.sparse]
    assert len(measured) == unhooked.FIRST_BLOCKS and late, (len(measured), len(late))
    assert blocks == measured + late
    assert late[0].t0 - loop.off._decided >= unhooked.SPARSE_FROM_S
    assert late[0].t0 - 1000.0 < 9.0, late[0].t0  # not SPARSE_AFTER_S
    every = unhooked.SPARSE_MAX_EVERY
    assert {b.every for b in late} == {every} and {b.every for b in measured} == {None}
    assert {b.steps for b in late[:-1]} == {loop.off.unit * (every - 1)}
    cycles = [b2.t0 - b1.t0 for b1, b2 in zip(late, late[1:])]
    # (counted in steps of the hooked length: the steps without their cost run ~10% shorter)
    assert all(0.85 < c / unhooked.SPARSE_CYCLE_S < 1.02 for c in cycles), cycles
    hooked = [(b2.t0 - b1.t1) / (b2.t0 - b1.t0) for b1, b2 in zip(late, late[1:])]
    assert all(0.01 < h < 0.03 for h in hooked), hooked  # (one in 50 of the steps, hooked ones longer)
    assert loop.clock.steps == 60000 == loop.recorded + loop.ticked


def test_sparse_share_follows_the_hooks_cost():
    """One step in how many stays hooked: their cost a step in place (else twice their own clocks')
    held to SPARSE_COST of the run, from SPARSE_EVERY to SPARSE_MAX_EVERY."""
    every = unhooked.sparse_every
    assert every(0.005, 0.000025, None) == 18  # 1.75% guessed (3.5x their clocks): 0.1% at 18
    assert every(0.002, 0.00002, 0.00003) == 15  # 1.5% in place: 0.1% at one in 15
    assert every(0.002, 0.00002, None) == 35  # (3.5 times their clocks' 1%)
    assert every(0.05, 0.000004, None) == unhooked.SPARSE_EVERY  # 0.03% guessed: 10 keeps 0.003%
    # 4.6% in place: 46 by cost, but two hooked steps a cycle of 0.6 s allow 30
    assert every(0.0097, 0.00015, 0.00045) == every(0.0097, 0.00015, None) == 30
    assert every(0.00036, 0.00002, 0.00006) == unhooked.SPARSE_MAX_EVERY  # 17%: 50 carries 0.33%
    assert every(float("inf"), 0.00002, None) == every(0.001, 0.0, None) == unhooked.SPARSE_EVERY
    # 25-ms steps costing 8%: 40 by cost, but two hooked steps a cycle of 0.6 s allow 12
    assert every(0.025, 0.00003, 0.002) == 12


def test_a_measurement_still_running_at_15_s_gives_way_then(tmp_path, monkeypatch):
    """10-ms steps whose hooks time 150 us and cost 300 more in place: blocks of BLOCK_MIN steps,
    FIRST_BLOCKS of them would take 19 s; the sparse ones begin at SPARSE_AFTER_S."""
    loop = Loop(tmp_path, monkeypatch, step_s=0.0097, own_s=0.00015, cost_s=0.0003)
    _from_start(loop, monkeypatch)
    for _ in range(2500):  # 25 s
        loop.step()
    loop.off.finish(None)
    blocks = loop.records()
    measured = [b for b in blocks if not b.sparse]
    late = [b for b in blocks if b.sparse]
    assert 10 <= len(measured) < unhooked.FIRST_BLOCKS and late, (len(measured), len(late))
    assert all(b.t0 - 1000.0 < unhooked.SPARSE_AFTER_S for b in measured)
    assert all(b.t0 - 1000.0 >= unhooked.SPARSE_AFTER_S for b in late)
    # (the measurement so far, 300 us a step in place, 3% of the step: one step in 31 by cost,
    # 30 by the cycle's two hooked steps)
    assert {b.every for b in late} == {30}
    assert loop.clock.steps == 2500 == loop.recorded + loop.ticked


def test_a_sparse_block_of_long_steps_stays_under_a_second(tmp_path, monkeypatch):
    """25-ms steps whose hooks time 30 us: a measurement block's 20 steps, nine times over, would
    keep the step-boundary probes (and a census the supervisor asks for) waiting 4.5 s."""
    loop = Loop(tmp_path, monkeypatch, step_s=0.025, own_s=0.00003)
    _from_start(loop, monkeypatch)
    for _ in range(1000):  # 25 s
        loop.step()
    loop.off.finish(None)
    blocks = loop.records()
    assert blocks and all(b.sparse for b in blocks)
    assert max(b.t1 - b.t0 for b in blocks) < 1.0
    assert loop.clock.steps == 1000 == loop.recorded + loop.ticked


def test_steps_long_beside_their_hooks_keep_every_step_hooked(tmp_path, monkeypatch):
    loop = Loop(tmp_path, monkeypatch, step_s=0.05, own_s=0.000025)  # 0.05% of the step
    _from_start(loop, monkeypatch)
    for _ in range(800):  # 40 s
        loop.step()
    assert loop.records() == [] and loop.recorded == 800


def test_a_long_gap_inside_a_block_ends_it_and_is_recorded_as_its_own_step(tmp_path, monkeypatch):
    """A sort at an epoch's start (0.4 s against 5-ms steps) inside a sparse block: spread evenly
    over the block's steps it was no pause, and the stacks inside it were read as the steps'. The
    block ends at the step before it, and the long step is recorded as hooked steps are."""
    loop = Loop(tmp_path, monkeypatch, step_s=0.005, own_s=0.000025)
    _sparse_by_now(loop, monkeypatch, 4000)  # 20 s
    loop.into_block(30)
    recorded = loop.recorded
    loop.step(gap=0.4)
    assert not loop.off.off and loop.recorded == recorded + 1
    for _ in range(500):
        loop.step()
    loop.off.finish(None)
    blocks = loop.records()
    cut = next(b for b in blocks if b.aborted)
    assert cut.steps == 30 and cut.sparse
    iv = loop.clock.intervals()
    long = [round(b - a, 3) for a, b in iv if b - a > 0.1]
    assert long == [0.405]  # the gap's step, as it was: a pause the statistics can leave out
    assert loop.clock.steps == loop.hooks.steps == loop.recorded + loop.ticked


def test_a_sparse_block_ended_by_a_phase_is_followed_by_the_next_after_one_hooked_stretch(
        tmp_path, monkeypatch):
    """An epoch's iter() ends a block (its records are wanted); at 390 steps an epoch, blocks of a
    460-step cycle were each ended so, and half the late steps stayed hooked. The next block now
    begins one hooked stretch after the phase."""
    loop = Loop(tmp_path, monkeypatch, step_s=0.005, own_s=0.000025)
    _sparse_by_now(loop, monkeypatch, 3400)  # 17 s
    loop.into_block(10)
    loop.hooks.phase()  # an epoch begins
    assert not loop.off.off
    hooked = 0
    while not loop.off.off:
        loop.step()
        hooked += 1
    assert hooked == loop.off.unit, hooked


def test_a_new_use_of_the_probes_counts_its_15_s_from_its_own_start(tmp_path, monkeypatch):
    """gpubottle.profile() or a notebook cell an hour after the kernel installed the probes: its
    steps are measured fully for their first 15 s, as a `gpubottle run` script's are."""
    loop = Loop(tmp_path, monkeypatch, step_s=0.005, own_s=0.000025)
    loop.off.started = loop.t - 3600.0
    loop.t += 3600.0
    loop.off.reset(types.SimpleNamespace(trial=None))
    assert loop.off.started == loop.t
    for _ in range(2000):  # 10 s
        loop.step()
    assert loop.records() == [] and loop.recorded == 2000
