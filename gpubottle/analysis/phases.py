"""What the loop's thread did outside the training step: evaluation passes and checkpoints, as spans
of time on the run's clock.

An evaluation pass is one epoch of a DataLoader (iter() to its last batch) with no backward and no
optimizer step inside it, in a run that trains, and either iterated under no_grad/inference_mode
or from a loader that never trains. An evaluation without a DataLoader (a function drawing its own
batches, as nanoGPT's estimate_loss does) is a model.eval() ... model.train() span after the first
training step with no backward and no optimizer step inside it, and no evaluation loader's pass.
A checkpoint is a save function's call on the main thread (one
on another thread does not stop the loop). The step statistics leave these spans out of each
step's time (StepEvidence.outside_s); the run's account shows them as phases of their own.
"""

from __future__ import annotations

import bisect
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gpubottle.analysis.device_clock import backlog
from gpubottle.analysis.loop_source import trains_beside
from gpubottle.collect.events import ChildEvents
from gpubottle.wire import Batch, ModeSet, Saved

Span = tuple[float, float]


@dataclass
class Timeline:
    """The run's bounds on CLOCK_MONOTONIC and the loop's."""

    launch: float
    exit: float
    loop_from: float  # start-up ends here: the first training batch drawn, or the first backward
    loop_to: float  # the last step's end

    @property
    def wall(self) -> float:
        return self.exit - self.launch


@dataclass
class LoaderPass:
    """One epoch of one DataLoader: from iter() to the end of its last batch's use."""

    loader: int  # the probes' loader id
    t0: float
    t1: float
    batches: list[Batch] = field(default_factory=list)
    grad: int | None = None  # autograd on (1) or off (0) when iter() was called
    workers: list[int] = field(default_factory=list)  # its DataLoader workers' pids
    ended: bool = False  # reached StopIteration
    trains: bool = False  # a backward or optimizer step happened inside it
    eval: bool = False
    site: str | None = None  # the user's line that started it (its for loop)
    build_s: float = 0.0  # its iter() call: building the iterator (forking or spawning its workers)


def _next_after(times: list[float], t: float) -> float | None:
    i = bisect.bisect_right(times, t)
    return times[i] if i < len(times) else None


def loader_passes(ev: ChildEvents) -> list[LoaderPass]:
    """Every epoch of every DataLoader, marked training or evaluation."""
    starts: dict[int, list[tuple[float, int | None, list[int], str | None, float]]] = {}
    for it in ev.iters:
        # The pass begins when iter() was called: building the iterator (forking or spawning its
        # workers) is the pass's cost; an evaluation's iter() left outside it was charged to training.
        begun = float(it.t0) if it.t0 is not None and float(it.t0) <= float(it.t) else float(it.t)
        starts.setdefault(int(it.loader), []).append(
            (begun, it.grad, [int(p) for p in it.worker_pids or [] if p], it.site, float(it.t) - begun))
    by_loader: dict[int, list[Batch]] = {}
    for b in sorted(ev.batches, key=lambda b: b.t0):
        by_loader.setdefault(int(b.loader), []).append(b)
    passes: list[LoaderPass] = []
    for lid, batches in by_loader.items():
        begins = sorted(starts.get(lid, []), key=lambda s: s[0])
        current: LoaderPass | None = None
        k = 0
        for b in batches:
            # A new iterator started before this batch: a new pass.
            while k < len(begins) and begins[k][0] <= b.t0:
                if current is not None:
                    passes.append(current)
                current = LoaderPass(lid, begins[k][0], b.t1, grad=begins[k][1], workers=begins[k][2],
                                     site=begins[k][3], build_s=begins[k][4])
                k += 1
            if current is None:  # a batch whose iter() was not recorded
                current = LoaderPass(lid, b.t0, b.t1)
            current.batches.append(b)
            current.t1 = b.t1
            if b.ended:
                current.ended = True
                passes.append(current)
                current = None
        if current is not None:
            passes.append(current)
    _mark(ev, passes)
    return sorted(passes, key=lambda p: p.t0)


def _mark(ev: ChildEvents, passes: list[LoaderPass]) -> None:
    """Which passes train, which evaluate, and where a pass that stopped early (a `break`) ends."""
    marks = sorted([float(w.t0) for w in ev.backwards] + [float(o.t) for o in ev.opt_steps])
    # What the loop does next, after a pass's last batch: another loader's batch, a backward, an
    # optimizer step or a save. A pass left by `break` ends there (its last batch's work done).
    events = sorted(marks + [float(b.t0) for b in ev.batches] + [float(s.t0) for s in ev.saves])
    trains_run = bool(marks)
    for p in passes:
        if not p.ended and p.batches:
            gaps = [b2.t0 - b1.t1 for b1, b2 in zip(p.batches, p.batches[1:])]
            nxt = _next_after(events, p.t1)
            if gaps:
                typical = statistics.median(gaps)
                p.t1 = min(nxt, p.t1 + 1.5 * typical) if nxt is not None else p.t1 + typical
            elif nxt is not None and nxt in marks:
                # One batch, its iterator dropped (`next(iter(loader))` each step): what the loop
                # does next is that batch's use, a training step when a backward or step comes next.
                p.t1 = nxt
        i = bisect.bisect_right(marks, p.t0)  # a backward or optimizer step after the pass began
        p.trains = i < len(marks) and marks[i] <= p.t1
    training_loaders = {p.loader for p in passes if p.trains}
    for p in passes:
        p.eval = trains_run and not p.trains and (p.grad == 0 or p.loader not in training_loaders)


def loop_saves(ev: ChildEvents) -> list[Saved]:
    """The saves the loop waited for: those on its own thread, from the first step on. A script
    that writes its data (samples, a cache) with torch.save before training is preparing, not
    checkpointing: that time stays in start-up."""
    intervals = ev.clock.intervals()
    if not intervals:
        return []
    first = intervals[0][0]
    return [s for s in ev.saves if s.main and float(s.t1) > first]


def save_spans(saves: list[Saved]) -> list[Span]:
    return [(float(s.t0), float(s.t1)) for s in saves]


def backward_spans(ev: ChildEvents) -> list[Span]:
    """Each backward() call as the probes timed it."""
    return [(float(w.t0), float(w.t1)) for w in ev.backwards]


def optimizer_spans(ev: ChildEvents) -> list[Span]:
    """Each optimizer step() call as the probes timed it (one whose start was not seen: none)."""
    return [(float(o.t0), float(o.t)) for o in ev.opt_steps if o.t0 is not None]


def merge(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for lo, hi in sorted(spans):
        if hi <= lo:
            continue
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def steps_spans(indices: list[int], intervals: list[Span]) -> list[Span]:
    """The steps `indices` (the pauses the statistics leave out, the unhooked ones) as merged spans
    of the clock's step intervals."""
    return merge([intervals[i] for i in indices if i < len(intervals)])


def overlap(lo: float, hi: float, spans: list[Span]) -> float:
    """Seconds of [lo, hi] covered by merged, sorted spans."""
    return overlap_total([(lo, hi)], spans)


def overlap_total(pairs: Iterable[Span], spans: list[Span]) -> float:
    """The sum of overlap(lo, hi, spans) over `pairs`, the spans' starts listed once (a long run's
    every fetch, backward and optimizer step: 100,000 calls that each listed them took 0.5 s)."""
    starts = [s[0] for s in spans]
    total = 0.0
    for lo, hi in pairs:
        for a, b in spans[max(0, bisect.bisect_right(starts, lo) - 1):]:
            if a >= hi:
                break
            total += max(0.0, min(b, hi) - max(a, lo))
    return total


def subtract(spans: list[Span], holes: list[Span]) -> list[Span]:
    """`spans` without the time in `holes` (both merged and sorted)."""
    out: list[Span] = []
    for lo, hi in spans:
        cur = lo
        for a, b in holes:
            if b <= cur or a >= hi:
                continue
            if a > cur:
                out.append((cur, a))
            cur = max(cur, b)
        if cur < hi:
            out.append((cur, hi))
    return out


@dataclass
class ModeSpan:
    """model.eval() to the next model.train(): an evaluation the script runs without a loader."""

    t0: float
    t1: float
    function: str | None  # the user's function that switched the model (estimate_loss)
    site: str | None  # its model.eval() line
    called_at: str | None  # the loop's call of that function


INLINE = "<loop>"  # the function of an evaluation written inline in the training loop's own code


def _mode_span(lo: float, hi: float, opened: ModeSet) -> ModeSpan:
    """Named by its function, called from the loop; or, written inline in the loop's own function
    (its model.eval() beside the backward), by its model.eval() line (main() and the line that
    calls main() say nothing of it)."""
    site = opened.site
    path, _, line = (site or "").rpartition(":")
    if site and line.isdigit() and trains_beside(path, int(line)):
        return ModeSpan(lo, hi, INLINE, site, site)
    return ModeSpan(lo, hi, opened.function, site, opened.called_at)


def mode_evals(ev: ChildEvents, passes: list[LoaderPass]) -> list[ModeSpan]:
    intervals = ev.clock.intervals()
    if not intervals or not ev.modes:
        return []
    first = intervals[0][0]
    trains = sorted([float(w.t0) for w in ev.backwards] + [float(o.t) for o in ev.opt_steps])
    loader_evals = merge([(p.t0, p.t1) for p in passes if p.eval])
    out: list[ModeSpan] = []
    opened: ModeSet | None = None
    for m in sorted(ev.modes, key=lambda m: m.t):
        if not m.training:
            opened = opened or m
            continue
        if opened is None:
            continue
        lo, hi = float(opened.t), float(m.t)
        i = bisect.bisect_right(trains, lo)
        trained = i < len(trains) and trains[i] < hi
        if lo >= first and not trained and overlap(lo, hi, loader_evals) == 0.0:
            out.append(_mode_span(lo, hi, opened))
        opened = None
    return out


@dataclass
class Carved:
    """The spans left out of the training steps: evaluation passes and checkpoints."""

    passes: list[LoaderPass]
    evals: list[LoaderPass]
    saves: list[Span]  # merged
    eval_spans: list[Span]  # merged, less the saves inside them
    all: list[Span]  # merged union of both
    eval_batches: set[int] = field(default_factory=set)  # id() of every batch of an eval pass
    mode_evals: list[ModeSpan] = field(default_factory=list)  # evaluations without a DataLoader
    # id() of every batch fetched on another thread than the loop's (a background prefetcher): the
    # loop does not wait in those fetches, whatever their spans overlap.
    off_loop: set[int] = field(default_factory=set)

    def loop_sites(self) -> tuple[set[str], set[str]]:
        """The user's lines that iterate the evaluation loaders, and the training loaders'."""
        return ({p.site for p in self.evals if p.site},
                {p.site for p in self.passes if p.site and not p.eval})

    def training_batches(self, batches: list[Batch]) -> list[Batch]:
        return [b for b in batches if id(b) not in self.eval_batches and id(b) not in self.off_loop]


def loop_thread(ev: ChildEvents) -> int | None:
    """The thread that steps the optimizers (None: the main thread, as in most scripts)."""
    threads = Counter(s.thread for s in ev.opt_steps)
    return threads.most_common(1)[0][0] if threads else None


def off_loop_batches(ev: ChildEvents) -> set[int]:
    """The batches fetched on another thread than the loop's."""
    loop = loop_thread(ev)
    return {id(b) for b in ev.batches if b.thread != loop}


def _after_backlog(span: Span, lag: Callable[[float], float]) -> Span:
    """A phase's span from when the device finished the training's work queued before it (on a GPU
    the host runs ahead; the wait for that backlog is the training's time, not the phase's)."""
    lo, hi = span
    return (lo + min(lag(lo), max(0.0, hi - lo)), hi)


def carve(ev: ChildEvents) -> Carved:
    lag = backlog(ev.device_marks)
    passes = loader_passes(ev)
    evals = [p for p in passes if p.eval]
    for p in evals:
        p.t0 = _after_backlog((p.t0, p.t1), lag)[0]
    saves = merge([_after_backlog(s, lag) for s in save_spans(loop_saves(ev))])
    modes = mode_evals(ev, passes)
    for m in modes:
        m.t0 = _after_backlog((m.t0, m.t1), lag)[0]
    eval_spans = subtract(merge([(p.t0, p.t1) for p in evals] + [(m.t0, m.t1) for m in modes]), saves)
    return Carved(passes, evals, saves, eval_spans, merge(saves + eval_spans),
                  {id(b) for p in evals for b in p.batches}, modes, off_loop_batches(ev))
