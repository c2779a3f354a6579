"""analysis/growth.py: the steps' trend, in the run or per epoch, and the line whose time grows."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubottle.analysis.growth import HISTORY, LIST_FRONT, SELF_CONCAT, line_growth_kind, step_growth
from gpubottle.analysis.stacks import Frame, ThreadSamples

RUNPY = Frame("_run_code", "<frozen runpy>", 88)


def _steps(durations: list[float]) -> list[tuple[float, float]]:
    out, t = [], 0.0
    for d in durations:
        out.append((t, t + d))
        t += d
    return out


def _samples(intervals: list[tuple[float, float]], script: Path, grow_line: int, flat_line: int,
             base: float, period: float = 0.0005) -> ThreadSamples:
    """Samples every `period`: within each step, its first `base` seconds on `flat_line`, the rest
    (the growth) on `grow_line`."""
    ts = ThreadSamples(1)
    for lo, hi in intervals:
        t = lo + period / 2
        while t < hi:
            line = flat_line if t - lo < base else grow_line
            ts.stacks.append([RUNPY, Frame("<module>", str(script), line)])
            ts.times.append(t)
            t += period
    return ts


@pytest.fixture
def script(tmp_path: Path) -> Path:
    p = tmp_path / "train.py"
    p.write_text("for xb, yb in loader:\n"
                 "    out = model(xb)\n"
                 "    kept = torch.cat([kept, out.detach()])\n"
                 "    losses.append(loss.item())\n"
                 "    avg = sum(losses) / len(losses)\n"
                 "    total = torch.cat([a, b])\n")
    return p


def test_a_steady_trend_in_the_run_is_fitted_and_its_line_named(script: Path) -> None:
    base, slope = 0.002, 0.00005
    durations = [base + slope * i for i in range(200)]
    intervals = _steps(durations)
    main = _samples(intervals, script, 3, 2, base)
    g = step_growth(intervals, durations, list(range(5, 200)), [], main)
    assert g is not None and not g.by_epoch
    assert g.per_step_s == pytest.approx(slope, rel=0.01) and g.rho > 0.99
    assert g.base_s == pytest.approx(base, rel=0.05)
    assert g.extra_s == pytest.approx(sum(slope * i for i in range(200)), rel=0.01)
    assert g.location is not None and g.location.endswith("train.py:3") and g.kind == SELF_CONCAT
    assert g.line_share is not None and g.line_share > 0.9


def test_growth_that_starts_again_each_epoch_is_fitted_by_position_in_the_epoch(script: Path) -> None:
    base, slope, per_epoch = 0.002, 0.0001, 60
    durations = [base + slope * (i % per_epoch) for i in range(3 * per_epoch)]
    intervals = _steps(durations)
    ends = [intervals[e * per_epoch - 1][1] + 1e-6 for e in (1, 2, 3)]
    g = step_growth(intervals, durations, list(range(3, len(durations))), ends, None)
    assert g is not None and g.by_epoch and g.rho > 0.99
    assert g.extra_s == pytest.approx(3 * sum(slope * i for i in range(per_epoch)), rel=0.02)
    assert g.location is None  # no stacks: the trend alone


def test_other_programs_bursts_in_the_middle_do_not_unsteady_a_rise(script: Path) -> None:
    """0.7 -> 5.5 ms over 750 steps, with other programs' load doubling most steps of two middle
    groups (as in a loaded CI run: their medians 6.6-7.6 ms, the groups' rank correlation 0.70):
    the groups' fastest steps still rise steadily. Bursts on flat steps make no trend."""
    import random

    rng = random.Random(1)
    rise = [0.0007 + 0.0000064 * i for i in range(750)]
    loaded = [d * (2.5 if 300 <= i < 450 and rng.random() < 0.7 else 1.0) for i, d in enumerate(rise)]
    g = step_growth(_steps(loaded), loaded, list(range(10, 750)), [], None)
    assert g is not None and g.rho >= 0.95, g
    flat = [0.002 * (2.5 if 300 <= i < 450 and rng.random() < 0.7 else 1.0) for i in range(750)]
    f = step_growth(_steps(flat), flat, list(range(10, 750)), [], None)
    assert f is None or f.rho < 0.8 or f.last_s < 1.5 * f.first_s, f


@pytest.mark.parametrize("durations", [
    [0.002] * 100,  # flat
    [0.004 - 0.00001 * i for i in range(100)],  # faster as it goes (warming caches)
    [0.002] * 20,  # too few to fit
])
def test_steps_that_do_not_grow_give_none(durations: list[float]) -> None:
    intervals = _steps(durations)
    assert step_growth(intervals, durations, list(range(len(durations))), [], None) is None


def test_the_kind_of_growing_work_is_read_from_the_line(script: Path) -> None:
    assert line_growth_kind(str(script), 3) == SELF_CONCAT  # kept = torch.cat([kept, ...])
    assert line_growth_kind(str(script), 5) == HISTORY  # sum(losses), appended at line 4
    assert line_growth_kind(str(script), 6) is None  # a cat of two other tensors
    assert line_growth_kind(str(script), 2) is None
    front = script.parent / "buffer.py"
    front.write_text("buf.append(x)\nif len(buf) > cap:\n    buf.pop(0)\nq.insert(0, x)\ndel self.q[0]\n"
                     "buf.pop()\nbuf.pop(-1)\nd.pop(0, None)\n")
    assert [line_growth_kind(str(front), i) for i in range(1, 9)] == [
        None, None, LIST_FRONT, LIST_FRONT, LIST_FRONT, None, None, None]  # (the back: no move)


def test_a_rise_that_comes_late_counts_only_the_time_above_the_first_steps_pace() -> None:
    """A replay buffer's list.pop(0) once it is full: steps at 0.8 ms for the first half of the
    run, then 2.2 ms. The fit's intercept (~0.4 ms) as the pace counted 6.5 s of growth there where
    the fix saved 4.2 s; the growth is what the steps took above their first tenth's own pace."""
    durations = [0.0008] * 3000 + [0.0008 + 0.0014 * min(1.0, i / 300) for i in range(3000)]
    intervals = _steps(durations)
    g = step_growth(intervals, durations, list(range(len(durations))), [], None)
    assert g is not None and g.base_s >= 0.00065, g  # (the first tenth carried back along the slope)
    above = sum(d - 0.0008 for d in durations)  # 4.0 s
    assert above * 0.9 <= g.extra_s <= above * 1.2, (g.extra_s, above)  # (6.3 s by the intercept)


def test_growth_inside_the_models_forward_is_its_own_work_unless_the_line_says_what_grows(
        script: Path, tmp_path: Path) -> None:
    """A curriculum's longer inputs make the model's forward grow: no line of the loop's is named.
    A forward that concatenates a kept tensor onto itself is named all the same."""
    module = Frame("Module._call_impl", "/site-packages/torch/nn/modules/module.py", 1750)
    base, slope = 0.002, 0.00005
    durations = [base + slope * i for i in range(200)]
    intervals = _steps(durations)
    for line, named in ((2, False), (3, True)):
        main = _samples(intervals, script, line, 2, base)
        main.stacks = [[st[0], st[1], module, Frame("forward", str(script), st[1].line)]
                       if st[1].line == line else st for st in main.stacks]
        g = step_growth(intervals, durations, list(range(5, 200)), [], main)
        assert g is not None and (g.location is not None) == named, (line, g)


def test_a_machine_getting_busier_slows_every_line_alike_and_names_none(script: Path) -> None:
    """Steps growing because other programs take the cores: each line's time scales with the step,
    so no line grew beyond the rest (a contention run of the suite once named its get_batch)."""
    durations = [0.002 + 0.00005 * i for i in range(200)]
    intervals = _steps(durations)
    ts = ThreadSamples(1)
    for lo, hi in intervals:  # each step: its first half on line 2, its second on line 5
        for k in range(20):
            t = lo + (hi - lo) * (k + 0.5) / 20
            ts.stacks.append([RUNPY, Frame("<module>", str(script), 2 if k < 10 else 6)])
            ts.times.append(t)
    g = step_growth(intervals, durations, list(range(5, 200)), [], ts)
    assert g is not None and g.location is None, g


def test_the_main_threads_cpu_per_step_tells_work_that_grows_from_waiting_for_a_core() -> None:
    """The sampler's readings of how much of the time the main thread ran: steps twice as long at
    the same CPU each (it ran half the time: other programs took the core) give a ratio near 1;
    steps twice as long, running throughout, a ratio near 2."""
    durations = [0.002 + 0.00002 * i for i in range(200)]
    intervals = _steps(durations)
    # a reading in every other step: in the waiting run, the thread ran the first step's time of each
    waiting = [((lo + hi) / 2, durations[0] / (hi - lo)) for lo, hi in intervals[::2]]
    working = [(t, 1.0) for t, _ in waiting]
    g_wait = step_growth(intervals, durations, list(range(200)), [], None, waiting)
    g_work = step_growth(intervals, durations, list(range(200)), [], None, working)
    assert g_wait is not None and g_work is not None and g_wait.cpu_ratio and g_work.cpu_ratio
    assert g_wait.cpu_ratio < 1.1 < 1.8 < g_work.cpu_ratio
    assert step_growth(intervals, durations, list(range(200)), [], None).cpu_ratio is None  # type: ignore[union-attr]


def test_a_line_inside_the_loaders_fetch_is_named_only_where_the_wait_for_batches_grew(
        script: Path) -> None:
    """Measured beside a busier machine: a dataset that sleeps on its reads, the hook's wait for
    each batch flat at 140-150 ms, while the stack samples drifted toward the read line and named
    it as work growing with the run. A dataset that really scans to its index grows the wait."""
    fetch = Frame("_BaseDataLoaderIter.__next__", "/site-packages/torch/utils/data/dataloader.py", 733)
    base, slope = 0.002, 0.00005
    durations = [base + slope * i for i in range(200)]
    intervals = _steps(durations)
    main = _samples(intervals, script, 6, 2, base)
    main.stacks = [[st[0], fetch, Frame("Rows.__getitem__", str(script), 6)] if st[1].line == 6 else st
                   for st in main.stacks]
    flat = step_growth(intervals, durations, list(range(5, 200)), [], main, None, [base] * 200)
    assert flat is not None and flat.location is None, flat
    grew = step_growth(intervals, durations, list(range(5, 200)), [], main, None,
                       [d - base for d in durations])
    assert grew is not None and grew.location is not None and grew.location.endswith("train.py:6")


def test_every_line_slowing_alike_is_the_machine_only_where_other_programs_got_busier(
        script: Path) -> None:
    """The rest-of-the-step guard reads other programs' load: rising from the early steps to the
    late ones, lines that all slow alike name none; held flat, the growing line is named (the
    early steps' few samples beside it no longer decide: a loaded suite run dropped cat_grow's
    line on 3 of them)."""
    base, slope = 0.002, 0.00005
    durations = [base + slope * i for i in range(200)]
    intervals = _steps(durations)
    ts = ThreadSamples(1)
    for lo, hi in intervals:  # the step's first 40% on line 2, the rest on the growing cat line 3
        for k in range(20):
            ts.stacks.append([RUNPY, Frame("<module>", str(script), 2 if k < 8 else 3)])
            ts.times.append(lo + (hi - lo) * (k + 0.5) / 20)
    end = intervals[-1][1]
    rising = [(end * k / 50, 0.1 + 1.5 * k / 50) for k in range(51)]
    flat = [(end * k / 50, 0.6) for k in range(51)]
    busy = step_growth(intervals, durations, list(range(5, 200)), [], ts, None, None, rising)
    held = step_growth(intervals, durations, list(range(5, 200)), [], ts, None, None, flat)
    assert busy is not None and busy.location is None
    assert held is not None and (held.location or "").endswith("train.py:3")


def test_where_the_threads_cpu_per_step_grew_with_the_steps_the_line_is_named_under_rising_load(
        script: Path) -> None:
    """Other programs got busier while the cat line grew (a loaded suite run: steps 7.7x, the main
    thread's CPU per step 12.7x): the thread worked more, it did not wait for a core, so the
    rest-of-step guard does not drop the line. Running half the time late (the machine's doing),
    it does."""
    base, slope = 0.002, 0.00005
    durations = [base + slope * i for i in range(200)]
    intervals = _steps(durations)
    ts = ThreadSamples(1)
    for lo, hi in intervals:
        for k in range(20):
            ts.stacks.append([RUNPY, Frame("<module>", str(script), 2 if k < 8 else 3)])
            ts.times.append(lo + (hi - lo) * (k + 0.5) / 20)
    end = intervals[-1][1]
    rising = [(end * k / 50, 0.1 + 1.5 * k / 50) for k in range(51)]
    working = [((lo + hi) / 2, 1.0) for lo, hi in intervals[::2]]
    waiting = [((lo + hi) / 2, durations[0] / (hi - lo)) for lo, hi in intervals[::2]]
    # ...and running 80% of the late steps' time: CPU per step grew 0.8 of the steps' growth
    mostly = [((lo + hi) / 2, 1.0 if i < 100 else 0.8) for i, (lo, hi) in enumerate(intervals) if i % 2 == 0]
    worked = step_growth(intervals, durations, list(range(5, 200)), [], ts, working, None, rising)
    most = step_growth(intervals, durations, list(range(5, 200)), [], ts, mostly, None, rising)
    waited = step_growth(intervals, durations, list(range(5, 200)), [], ts, waiting, None, rising)
    assert worked is not None and (worked.location or "").endswith("train.py:3"), worked
    assert most is not None and (most.location or "").endswith("train.py:3"), most
    assert waited is not None and waited.location is None, waited


def test_a_kept_list_written_out_whole_each_step_is_a_rewrite(tmp_path: Path) -> None:
    """json.dump(history, f) at every step after history.append(...): the whole file written again
    (3,000 steps: 20.4 s; one JSON line appended a step, 2.8 s)."""
    from gpubottle.analysis.growth import REWRITE

    path = tmp_path / "log.py"
    path.write_text("history = []\nhistory.append(1)\njson.dump(history, f)\nnp.save(p, history)\n"
                    "torch.save(model.state_dict(), p)\njson.dump(config, f)\n")
    assert line_growth_kind(str(path), 3) == REWRITE
    assert line_growth_kind(str(path), 4) == REWRITE  # (the kept name second)
    assert line_growth_kind(str(path), 5) is None  # a state dict: its size does not grow
    assert line_growth_kind(str(path), 6) is None  # nothing appends to config
