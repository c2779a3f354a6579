"""Steps on the device's own clock, from made-up marks (analysis/device_clock.py), and what the
measured steps make of them (Evidence.measured: the pace, the input wait that costs the step)."""

from __future__ import annotations

from factories import evidence

from gpubottle.analysis.device_clock import device_steps


def _host_ahead(steps: int = 8) -> list[list[object]]:
    """The host records a boundary every 1 ms; each step's 10 ms of GPU work finishes 10 ms apart,
    the device busy from the start. The anchor at the end completes as it is recorded."""
    marks: list[list[object]] = []
    for k in range(1, steps + 1):
        marks.append(["s", k, 0.010 * (k - 1), 100.0 + 0.001 * k])  # device time from the first mark
    end = 0.010 * (steps - 1)
    marks.append(["z", steps, end, 100.0 + 0.001 + end])  # the host waited for the device, then marked
    return marks


def test_steps_are_timed_on_the_device_and_the_host_ahead_is_its_lag():
    d = device_steps(_host_ahead(), 8)
    assert d is not None
    assert d.durations_s[0] is None and all(abs((x or 0) - 0.010) < 1e-9 for x in d.durations_s[1:])
    assert d.input_idle_s == [None] * 8  # no DataLoader: no fetches seen
    # Step k's work finishes at 100.001 + 0.010 (k - 1) on the host's clock, recorded at 100 + 0.001 k.
    assert all(abs((lag or 0) - (0.009 * (k - 1))) < 1e-6 for k, lag in enumerate(d.lag_s, 1))


def test_the_device_idles_between_a_fetchs_marks():
    # Before each fetch the device still has 2 ms of work; the fetch returns 5 ms later: 3 ms idle.
    marks: list[list[object]] = [["s", 0, 0.0, 50.0]]
    t = 0.0
    for k in range(1, 5):
        marks += [["a", k - 1, t + 0.002, 50.0 + t], ["b", k - 1, t + 0.005, 50.0 + t + 0.005],
                  ["s", k, t + 0.012, 50.0 + t + 0.006]]
        t += 0.012
    d = device_steps(marks, 4)
    assert d is not None
    assert all(abs((x or 0) - 0.003) < 1e-9 for x in d.input_idle_s)
    assert all(abs((x or 0) - 0.012) < 1e-9 for x in d.durations_s)


def test_marks_it_cannot_read_are_skipped_and_no_boundary_is_no_clock():
    assert device_steps([["a", 0, 0.0, 1.0], ["b", 0, 0.001, 1.001]], 5) is None
    assert device_steps([["s", 1], "x", ["s", "two", 0.0, 1.0]], 3) is None
    assert device_steps([], 3) is None


def test_the_measured_steps_take_the_devices_pace_and_the_wait_that_costs_the_step():
    # Host: 12 ms steps waiting 10 ms for data; device: 12 ms steps, 9 ms of work (the backlog at
    # each step's end), the fetch's own idle 1 ms. Hiding the wait leaves the GPU's 9 ms: 3 ms a
    # step is what the wait costs, not the host's 10 ms.
    ev = evidence(steps=40, step_s=0.012, wait_s=0.010, wait_cpu_s=0.010)
    st = ev.steps
    st.device_s = [None] + [0.012] * 39
    st.device_lag_s = [0.009] * 40
    st.device_input_idle_s = [None] + [0.001] * 39
    m = ev.measured()
    assert m is not None and m.device_busy_s == 0.009 and m.device_lag_s == 0.009
    assert abs((m.device_wait_s or 0) / m.n - 0.003) < 1e-9
    assert abs(m.wait_share - 0.25) < 1e-9 and abs(m.host_wait_share - 10 / 12) < 1e-9
    assert abs(m.compute_s - 0.009) < 1e-9
    # Too few steps on the device's clock: the host's view stands.
    st.device_s = [None] * 40
    m = ev.measured()
    assert m is not None and m.device_wait_s is None and abs(m.wait_share - 10 / 12) < 1e-9


def test_a_phase_starts_after_the_backlog_the_device_still_had():
    """A "p" mark where an evaluation or a save begins: recorded at host 100.008, it completed when
    the 8 steps' work had run (device 0.07 s, host 100.071): 63 ms of the training's work were
    still queued, which the phase's span must not be charged for. No mark near: nothing moves."""
    from gpubottle.analysis.device_clock import backlog

    marks = _host_ahead(8)
    marks.insert(8, ["p", 8, 0.070, 100.008])
    lag = backlog(marks)
    assert round(lag(100.008), 3) == 0.063 and round(lag(100.02), 3) == 0.063  # within 20 ms
    assert lag(100.5) == 0.0 and backlog([])(100.0) == 0.0


def test_carving_moves_a_saves_backlog_to_the_training():
    """A save that begins with 63 ms of the training's work still queued: its span starts once the
    device has run it; the rest of the save is the checkpoint's."""
    from gpubottle.analysis.phases import carve
    from gpubottle.collect.events import ChildEvents
    from gpubottle.wire import OptimizerStep, Saved

    ev = ChildEvents()
    for k in range(1, 9):
        ev.add(OptimizerStep(1, 100.0 + 0.001 * k, 100.0 + 0.001 * k - 0.0005))
    ev.add(Saved(100.0085, 100.2, "train.py:30", "torch.save", 1 << 20, 1, None))
    for k in range(9, 12):
        ev.add(OptimizerStep(1, 100.2 + 0.001 * k, 100.2 + 0.001 * k - 0.0005))
    marks = _host_ahead(8)
    marks.insert(8, ["p", 8, 0.070, 100.008])
    ev.device_marks = marks
    [(lo, hi)] = carve(ev).saves
    assert round(lo, 4) == round(100.0085 + 0.063, 4) and hi == 100.2


def test_a_clock_that_kept_to_its_budget_says_how_many_steps_it_timed():
    """The events' last DeviceMarks count the steps seen and left unseen: the report's notes say it."""
    from gpubottle.analysis.build import _collectors
    from gpubottle.collect.events import ChildEvents
    from gpubottle.wire import DeviceMarks

    ev = ChildEvents()
    ev.add(DeviceMarks([["s", 1, 0.0, 1.0]], 10, 5, 0.001))
    ev.add(DeviceMarks([["s", 2, 0.1, 1.1]], 412, 2589, 0.0412))
    note = _collectors({}, ev, True)["device-clock"].note
    assert note is not None and "timed 412 of 3001 steps" in note and "100 us a timed step" in note
    quiet = ChildEvents()
    quiet.add(DeviceMarks([["s", 1, 0.0, 1.0]], 3000, 0, 0.2))
    assert "device-clock" not in _collectors({}, quiet, True)
