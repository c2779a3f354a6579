"""Step intervals and the input wait inside each step, from the events replayed through the one
StepClock (gpubottle/clock.py), which also decides what counts as a measured step."""

from __future__ import annotations

import statistics

from gpubottle.analysis.device_clock import device_steps
from gpubottle.analysis.hooks_cost import in_place_cost, own_time_s, unhooked_blocks
from gpubottle.analysis.phases import Carved, backward_spans, merge, optimizer_spans, overlap
from gpubottle.clock import PAUSE_FACTOR, PAUSE_MIN_S, measured_indices, warmup_count
from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import StepEvidence
from gpubottle.wire import Batch


def input_waits(intervals: list[tuple[float, float]], batches: list[Batch]
                ) -> tuple[list[float], list[float | None], list[float | None]]:
    """Per step: seconds spent inside DataLoader.__next__, and the loading thread's CPU and run-queue
    time in it (batches sorted by start; None where not measured)."""
    waits: list[float] = []
    cpus: list[float | None] = []
    queues: list[float | None] = []
    j = 0
    for lo, hi in intervals:
        wait = 0.0
        cpu: float | None = None
        rq: float | None = None
        while j < len(batches) and batches[j].t1 <= lo:
            j += 1
        k = j
        while k < len(batches) and batches[k].t0 < hi:
            b = batches[k]
            overlap = max(0.0, min(b.t1, hi) - max(b.t0, lo))
            wait += overlap
            if b.t1 > b.t0:
                part = overlap / (b.t1 - b.t0)
                if b.cpu is not None:
                    cpu = (cpu or 0.0) + float(b.cpu) * part
                if b.rq is not None:
                    rq = (rq or 0.0) + float(b.rq) * part
            k += 1
        waits.append(wait)
        cpus.append(cpu)
        queues.append(rq)
    return waits, cpus, queues


def pauses(durations: list[float], waits: list[float], candidates: list[int],
           work: list[float] | None = None) -> list[int]:
    """Steps far longer than the median that were not spent waiting for data (once evaluation and
    checkpoints are carved out of them): something else in the loop. A long step spent waiting
    (workers starting again each epoch) is the input pipeline's cost, not a pause, and stays
    measured; so is one spent in its own backward() and optimizer step (`work`: their time in each
    step): a batch of longer sequences, a backward slowed by denormal floats, is a long step, not
    time between steps (a GRU's bucketed batches of 8-200 steps: 18 of 121 read "long gaps in the
    loop: loss.backward()", 55% of the run)."""
    if not candidates:
        return []
    med = statistics.median(durations[i] for i in candidates)
    own = work or [0.0] * len(durations)
    return [i for i in candidates
            if durations[i] > PAUSE_FACTOR * med and durations[i] > PAUSE_MIN_S
            and durations[i] - waits[i] - own[i] > PAUSE_FACTOR * med]


def step_evidence(ev: ChildEvents, carved: Carved | None = None) -> StepEvidence:
    """The steps of the clock, each with its input wait (training loaders' batches only) and the
    time it spent in evaluation passes and checkpoints (`carved`), which its statistics leave out."""
    clock = ev.clock
    batches = sorted(ev.batches, key=lambda b: b.t0)
    if carved is not None:
        batches = carved.training_batches(batches)
    intervals = clock.intervals()
    out = StepEvidence(
        source=clock.final_source(),
        optimizers=len({s.opt for s in ev.opt_steps}),
        backward_calls=len(ev.backwards),
        batches=sum(1 for b in batches if not b.ended),
    )
    out.durations_s = [hi - lo for lo, hi in intervals]
    out.input_wait_s, out.input_wait_cpu_s, out.input_wait_run_queue_s = input_waits(intervals, batches)
    dev = device_steps(ev.device_marks, len(intervals))
    if dev is not None:
        out.device_s, out.device_input_idle_s, out.device_lag_s = dev.durations_s, dev.input_idle_s, dev.lag_s
    if carved is not None and carved.all:
        out.outside_s = [round(overlap(lo, hi, carved.all), 6) for lo, hi in intervals]
    out.instrumented = [
        i for i, (lo, hi) in enumerate(intervals)
        if any(lo < p.t1 and hi > p.t0 for p in ev.perturbed)
    ]
    out.warmup = warmup_count(len(intervals))
    blocks = unhooked_blocks(intervals, ev.unhooked)
    out.unhooked = [i for b in blocks for i in range(b.i0, b.i1)]
    out.thinned = sum(b.i1 - b.i0 for b in blocks if b.sparse)
    sparse_t0 = min((float(r.t0) for r in ev.unhooked if r.sparse), default=None)
    if sparse_t0 is not None and ev.start is not None:
        out.thinned_from_s = round(sparse_t0 - float(ev.start.t), 1)
    out.thinned_every = max((int(r.every) for r in ev.unhooked if r.sparse and r.every), default=None)
    own = own_time_s(ev.probe_cost) / max(1, out.hooked_count())
    out.in_place = in_place_cost(out.paced(), out.net_durations(), blocks, out.instrumented, out.warmup, own)
    skip = set(out.instrumented) | set(out.unhooked)
    candidates = [i for i in range(out.warmup, len(intervals)) if i not in skip]
    # On the device's clock where it has one: a step whose .item() drained the backlog of the steps
    # before it is long on the host's clock only.
    idle = [i if i is not None else w for i, w in zip(out.device_input_idle_s, out.input_wait_s)] \
        if out.device_input_idle_s else out.input_wait_s
    # ...nor one spent in iter() starting the next epoch's workers (outside any fetch): the input
    # pipeline's cost too (a worker_init_fn of 1 s: one epoch's restart had 34 ms of iter() beside
    # its 1.03-s wait, over ten median steps, and read as a pause between steps).
    building = merge([(float(it.t0), float(it.t)) for it in ev.iters if it.t0 is not None and it.t > it.t0])
    if building:
        idle = [w + overlap(lo, hi, building) for w, (lo, hi) in zip(idle, intervals)]
    calls = merge(backward_spans(ev) + optimizer_spans(ev))
    work = [overlap(lo, hi, calls) for lo, hi in intervals] if calls else None
    out.outliers = pauses(out.net_durations(), idle, candidates, work)
    if measured_indices(len(intervals), out.warmup, out.instrumented, out.outliers, out.unhooked):
        out.measured_from = intervals[out.warmup][0]
        out.measured_to = intervals[-1][1]
    return out
