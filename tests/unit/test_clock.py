"""The one step clock, live and replayed, and the timing logic around it, on a fake clock: nothing
here sleeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubottle.clock import StepClock, measured_indices
from gpubottle.collect.events import ChildEvents, read_events
from gpubottle.launch.status import StatusTracker, status_line
from gpubottle.probes.recorder import EarlyStop, Recorder, Stopper
from gpubottle.wire import Backward, Batch, OptimizerBuilt, OptimizerStep, Stop, decode_line


class FakeClock:
    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


def _replay(records: list) -> ChildEvents:
    ev = ChildEvents()
    for r in records:
        ev.add(r)
    return ev


def test_gan_iteration_is_one_step_and_its_time_runs_between_the_first_optimizers_steps():
    recs = [OptimizerBuilt(1, "Adam", None), OptimizerBuilt(2, "Adam", None)]
    for i in range(6):  # D steps, then G steps, every iteration
        recs += [Batch(9, i + 0.0, i + 0.1, None, 0), OptimizerStep(1, i + 0.5), OptimizerStep(2, i + 0.9)]
    clock = _replay(recs).clock
    assert clock.source == "optimizer" and clock.steps == 6
    iv = clock.intervals()
    assert len(iv) == 6 and iv[0] == (0.0, 0.5) and iv[1] == (0.5, 1.5)


def test_training_with_one_optimizer_then_another_counts_both_phases():
    recs = [OptimizerStep(1, float(i)) for i in range(1, 11)]
    recs += [OptimizerStep(2, 10.0 + i) for i in range(1, 21)]
    # B's first step joins A's last iteration (as a GAN's second optimizer would); then each is one.
    assert _replay(recs).clock.steps == 10 + 19


def test_gradient_accumulation_counts_optimizer_steps_not_backward_calls():
    recs: list = [OptimizerBuilt(1, "SGD", None)]
    t = 0.0
    for _ in range(5):
        for _ in range(4):
            recs.append(Backward(t, t + 0.01))
            t += 0.02
        recs.append(OptimizerStep(1, t))
    clock = _replay(recs).clock
    assert clock.steps == 5 and len(clock.intervals()) == 5
    # Before the first optimizer step the live count stays 0: --steps must not stop at a backward.
    live = StepClock()
    live.optimizer_created()
    assert live.backward(0.0, 0.1) is False and live.steps == 0


def test_an_optimizer_built_but_never_stepped_falls_back_to_backward_after_the_run():
    recs: list = [OptimizerBuilt(1, "SGD", None)] + [Backward(i, i + 0.5) for i in range(8)]
    clock = _replay(recs).clock
    assert clock.source == "optimizer" and clock.steps == 0  # live: waiting for a step()
    assert clock.final_source() == "backward" and len(clock.intervals()) == 8


def test_inference_loop_steps_run_fetch_to_fetch_and_a_stop_ends_the_last():
    recs: list = [Batch(1, float(i), i + 0.2, None, 0) for i in range(5)]
    recs.append(Stop("steps", 5.0))  # --steps 5 raised at the sixth fetch, which never ran
    clock = _replay(recs).clock
    assert clock.source == "dataloader" and len(clock.intervals()) == 5
    assert clock.intervals()[-1] == (4.0, 5.0)


def test_live_count_and_replayed_count_agree(tmp_path: Path):
    """The child's stopper and the analysis read the same clock: --steps N gives N steps."""
    path = tmp_path / "events.jsonl"
    fake = FakeClock()
    rec = Recorder(str(path), start_thread=False)
    clock = StepClock()
    stop = Stopper(rec, clock, steps=7, duration=None, now=fake)
    rec.emit(OptimizerBuilt(1, "SGD", None))
    clock.optimizer_created()
    with pytest.raises(EarlyStop):
        for _ in range(100):
            fake.advance(0.1)
            rec.emit(Batch(1, fake.t, fake.t + 0.01, 0.0, 0))
            stop.check(clock.fetch(fake.t))
            fake.advance(0.05)
            rec.emit(OptimizerStep(1, fake.t))
            stop.check(clock.optimizer_step(1, fake.t))
    rec.close()
    assert clock.steps == 7
    ev = read_events(str(path))
    assert ev.stop is not None and ev.stop.reason == "steps" and ev.stop.t == fake.t
    assert ev.clock.steps == 7 and len(ev.clock.intervals()) == 7


def test_duration_stops_at_the_first_check_past_the_deadline():
    fake = FakeClock()
    rec = Recorder("/dev/null", start_thread=False)
    stop = Stopper(rec, StepClock(), steps=None, duration=30.0, now=fake)
    fake.advance(29.9)
    stop.check(True)  # not yet
    fake.advance(0.2)
    with pytest.raises(EarlyStop):
        stop.check(False)  # any probe event past the deadline stops, not only a step's end
    assert stop.stopped
    stop.check(True)  # once stopped, never again


def test_recorder_writes_named_records_one_per_line(tmp_path: Path):
    path = tmp_path / "e.jsonl"
    rec = Recorder(str(path), start_thread=False)
    rec.emit(Batch(3, 1.0, 1.5, 0.25, 0))
    rec.emit(OptimizerStep(5, 2.0))
    rec.emit(object())  # not a record: dropped at flush, the others kept
    rec.flush()
    lines = path.read_text().splitlines()
    assert [decode_line(x) for x in lines] == [Batch(3, 1.0, 1.5, 0.25, 0), OptimizerStep(5, 2.0)]


def test_recorder_flushes_less_often_after_its_first_seconds(tmp_path: Path):
    fake = FakeClock(50.0)
    rec = Recorder(str(tmp_path / "e.jsonl"), 0.5, start_thread=False, now=fake)
    assert rec.interval_at(0.0) == 0.5 and rec.interval_at(14.9) == 0.5
    assert rec.interval_at(15.0) == 2.0 and rec.interval_at(3600.0) == 2.0
    slow = Recorder(str(tmp_path / "f.jsonl"), 5.0, start_thread=False, now=fake)
    assert slow.interval_at(20.0) == 5.0  # a longer interval asked for is kept


def test_status_rate_and_wait_share_over_the_last_five_seconds():
    fake = FakeClock(1000.0)
    tr = StatusTracker(now=fake)
    for i in range(50):  # 10 steps/s, each waiting 25 ms for its batch
        t = 995.0 + i * 0.1
        tr.add(Batch(1, t, t + 0.025, None, 0))
        tr.add(OptimizerStep(1, t + 0.09))
    assert tr.steps == 50
    rate = tr.rate(fake.t)
    assert rate is not None and abs(rate - 10.0) < 1e-6
    share = tr.wait_share(fake.t)
    assert share is not None and abs(share - 0.25) < 1e-6
    line = status_line(tr, {}, 1, started=fake.t - 75, now=fake.t)
    assert line.startswith("gpubottle 01:15 | step 50 | 10.0 steps/s | input wait 25%")
    fake.advance(1.5)  # the file lags by a flush interval: the share is the newest records'
    share = tr.wait_share(fake.t)
    assert share is not None and abs(share - 0.25) < 1e-6
    fake.advance(60)  # a minute with nothing new: the recent window is empty again
    assert tr.rate(fake.t) is None and tr.wait_share(fake.t) == 0.0


def test_measured_indices_leave_out_warmup_probes_and_pauses():
    assert measured_indices(10, 2, instrumented=[4, 5], pauses=[8]) == [2, 3, 6, 7, 9]


def test_an_optimizer_built_anew_every_iteration_still_counts_every_step():
    """`opt = torch.optim.Adam(...)` inside the loop: each new optimizer steps once, so none ever
    "steps again"; counted as one step of many optimizers (or, as Python reuses a freed one's id,
    at random), 256 steps read as 47 and the verdict as data-starved. A GAN's two optimizers built
    anew every iteration stay one step an iteration."""
    recs: list = []
    for i in range(20):
        key = 1000 + i % 3  # ids come back as optimizers are freed
        recs += [OptimizerBuilt(key, "Adam", "train.py:9"), Backward(i + 0.1, i + 0.2),
                 OptimizerStep(key, i + 0.5)]
    assert len(_replay(recs).clock.intervals()) == 20
    recs = []
    for i in range(10):
        d, g = 2000 + 2 * i, 2001 + 2 * i
        recs += [OptimizerBuilt(d, "Adam", "gan.py:30"), OptimizerBuilt(g, "Adam", "gan.py:31"),
                 OptimizerStep(d, i + 0.3), OptimizerStep(g, i + 0.6)]
    assert _replay(recs).clock.steps == 10
