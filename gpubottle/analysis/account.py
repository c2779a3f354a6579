"""The run's wall time, launch to exit, by phase: every second in exactly one entry.

The timeline is cut in three: start-up (launch to the first batch the training draws, or its first
backward), the loop (the step clock's steps, which follow each other with no gap), and tear-down
(the last step's end to the process's exit). Evaluation passes and checkpoints are carved out of
whichever of the three they fall in. What is left of the steps is the training; from it come the
long gaps no phase explains (between-steps, named by the main thread's stacks) and gpubottle's
own cost: the steps its heavier probes slowed (their time beyond a typical step), its hooks (the
hot ones as they timed themselves, the rarer at a price calibrated in the script's process), the
step probes as timed, its samplers' CPU where the cores they share with the run (the machine's, or
the run's own where it may use fewer) had none to spare, the time its memory reads held the
script's main thread blocked, and its own start before the script's first line. The entries
therefore sum to the wall time (counted from gpubottle's start).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from gpubottle.analysis.cpu import in_spans
from gpubottle.analysis.gaps import gaps_row_loop, in_steps_share, regular_every, spent_on
from gpubottle.analysis.loop_time import named_time
from gpubottle.analysis.own_cost import (
    collectors_s,
    device_slowed,
    held_s,
    hooks_s,
    moved_gc_s,
    own_start,
    probed_slowed,
    probes_installed,
    step_work,
)
from gpubottle.analysis.phases import (
    INLINE,
    Carved,
    ModeSpan,
    Span,
    Timeline,
    loop_saves,
    merge,
    overlap,
    overlap_total,
    steps_spans,
    subtract,
)
from gpubottle.analysis.producers import waiting_for_input
from gpubottle.analysis.samples import Samples
from gpubottle.analysis.stack_names import OWN_STARTUP_PART
from gpubottle.analysis.stack_users import making_batches
from gpubottle.analysis.stacks import (
    ThreadSamples,
    fetching_sample,
    phase_of,
    within,
    without_evaluations,
    without_held,
)
from gpubottle.analysis.startup_parts import startup_parts
from gpubottle.analysis.warmup_parts import compiling_share, timed_calls, timed_excess, without_warmup
from gpubottle.analysis.work_kinds import COMPILING, work_kind
from gpubottle.clock import host_ahead
from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import CpuEvidence, LoaderInfo, StepEvidence, item_at
from gpubottle.evidence.account import (
    BETWEEN_STEPS,
    CHECKPOINT,
    EVAL,
    HOOKS_PART,
    INFERENCE,
    OWN,
    STARTUP,
    TEARDOWN,
    TRAIN,
    AccountEntry,
    PhaseEvidence,
)
from gpubottle.wire import EvalCalls


def timeline(ev: ChildEvents, meta: dict[str, Any], carved: Carved) -> Timeline | None:
    launch = meta.get("started_mono") or (float(ev.start.t) if ev.start else None)
    end = meta.get("ended_mono") or (float(ev.end.t) if ev.end else None)
    if launch is None or end is None or end <= launch:
        return None
    intervals = ev.clock.intervals()
    if not intervals:
        stop = float(ev.end.t) if ev.end else end
        return Timeline(launch, end, stop, stop)
    first = intervals[0][0]
    # The first batch the training drew ends start-up: its wait is workers (or the dataset) starting.
    batch = next((b for b in ev.batches if abs(b.t0 - first) < 1e-9
                  and id(b) not in carved.eval_batches and not b.ended), None)
    loop_from = float(batch.t1) if batch is not None else first
    return Timeline(launch, end, min(loop_from, intervals[0][1]), intervals[-1][1])


def _entry(phase: str, seconds: float, wall: float, **kw: Any) -> AccountEntry:
    return AccountEntry(phase=phase, seconds=round(max(0.0, seconds), 4),
                        share=round(max(0.0, seconds) / wall, 4) if wall > 0 else 0.0, **kw)


# The first steps' time above the typical step, where it is this share of the run or more: warm-up,
# not the training's pace.
WARMUP_MIN_SHARE = 0.01
WARMUP = "the first steps' warm-up"


def warmup_excess(steps: StepEvidence, net: list[float], keep: list[int], on_device: bool) -> float:
    """The warm-up steps' time above the typical measured step: CUDA's lazy start, cuBLAS and cuDNN
    handles, cudnn.benchmark trying its algorithms, the allocator's first blocks, paid once. On the
    device's clock where the GPU paces the run (the host ran ahead: its first steps only queued
    work), else the host's steps' own work (own_cost.step_work: net of evaluation, checkpoints
    and the waits for batches, which are the loader's however early they come). Pauses and steps under the
    heavier probes are counted elsewhere (on the host's clock: on the device's, a probe costs a
    GPU-paced step nothing measurable, so the first steps' time is the warm-up's). A step with no
    device time (the first: no event before it) is read on the host's clock, where cuDNN's
    algorithm search and cuBLAS's handles block the host."""
    skip = set(steps.outliers) | (set() if on_device else set(steps.instrumented))
    first = [i for i in range(min(steps.warmup, len(net))) if i not in skip]
    dev = [item_at(steps.device_s, i) for i in range(len(net))] if on_device else [None] * len(net)
    paced = [h if d is None else d for d, h in zip(dev, net)]
    # (on the device's clock, the typical step is the device's: steps it did not time are left out)
    typical = [paced[i] for i in keep if not on_device or dev[i] is not None]
    if not first or not typical:
        return 0.0
    mid = statistics.median(typical)
    return sum(max(0.0, paced[i] - mid) for i in first)


def _train_parts(calls: dict[str, list[Span]], spans: list[Span], train_s: float,
                 main: ThreadSamples | None, background: bool = False, unhooked: list[Span] | None = None
                 ) -> tuple[dict[str, float], dict[str, str]]:
    """The training's split: input, backward and optimizer measured by the probes (`calls`:
    warmup_parts.timed_calls); forward and the loop's other code told apart by the main thread's
    stacks (else left together). `unhooked`: blocks of steps run without the probes, whose share
    of each timed part is taken to be the hooked steps'."""
    batches = calls["input"]
    hooked = subtract(spans, unhooked) if unhooked else spans
    timed = sum(b - a for a, b in hooked)
    scale = sum(b - a for a, b in spans) / timed if timed > 0 else 1.0
    inp = overlap_total(batches, hooked) * scale
    back = overlap_total(calls["backward"], hooked) * scale
    opt = overlap_total(calls["optimizer"], hooked) * scale
    rest = max(0.0, train_s - inp - back - opt)
    parts = {"input": inp, "backward": back, "optimizer": opt}
    sites: dict[str, str] = {}
    # A sample compiling (torch.compile's first calls, recompilations) is that, whatever step part
    # it is inside: warm-up the run pays, not the model's arithmetic.
    # A loop with no DataLoader pulling its next batch from its own generator: that is its input;
    # so is the DataLoader's machinery outside a fetch (iter() starting workers, a dropped iterator
    # stopping them: `next(iter(loader))` every step).
    own_batches = making_batches(main.stacks) if main is not None else []
    # ...and one receiving batches another process or thread made (a queue's get): its input too.
    waited = [st for st, _ in waiting_for_input(main.stacks)] if main is not None else []
    making = {id(st) for st in own_batches + waited}
    from_producer = len(waited) > len(own_batches)
    fetching = merge(batches)

    def kind(st: list[Any], t: float) -> str:
        if work_kind(st) == COMPILING:
            return COMPILING
        if id(st) in making:
            return "making"
        phase = phase_of(st)
        if phase != "data":
            return phase
        # Inside a DataLoader's __next__: a fetch, which the probes timed (their `inp`) wherever
        # py-spy's late clock put the sample; the rest of its machinery (iter() starting workers, a
        # dropped iterator stopping them) only the stacks see. (By time, a 0.5-ms fetch's samples
        # fell outside it three times in four and were counted again.)
        if batches and fetching_sample(st):
            return "data"
        return "iterating" if t >= 0 and not in_spans(t, fetching) else phase

    if main is not None:  # (samples read without their times: none is told to be outside a fetch)
        times = main.times if len(main.times) == len(main.stacks) else [-1.0] * len(main.stacks)
        counts = Counter(kind(st, t) for st, t in zip(main.stacks, times))
    else:
        counts = Counter()
    fwd, other, comp = counts.get("forward", 0), counts.get("other", 0), counts.get(COMPILING, 0)
    mk, itr = counts.get("making", 0), counts.get("iterating", 0)
    if fwd + other + comp + mk + itr >= 10 and main is not None:
        n = fwd + other + comp + mk + itr
        parts[COMPILING] = rest * comp / n
        parts["forward"] = rest * fwd / n
        parts["input"] += rest * (mk + itr) / n
        parts["other code"] = rest * other / n
        top = named_time(main.stacks, own_batches=own_batches)
        if top:
            sites["other code"] = f"{top[0].function} ({top[0].location})"
        if mk or itr:
            sites["input"] = ("waiting for a background thread's DataLoader" if background and mk >= itr
                              else "waiting for a producer's batches, no DataLoader"
                              if mk >= itr and from_producer
                              else "the loop's own batches, no DataLoader" if mk >= itr
                              else "the DataLoader's fetches and its iterators starting and stopping")
    else:
        parts["forward and other code"] = rest
    return {k: round(v, 4) for k, v in parts.items() if v > 0}, sites


def _gpu_parts(parts: dict[str, float], train_s: float, lead: float,
               idle: float) -> tuple[dict[str, float], dict[str, str]]:
    """The training of a run the GPU paced: its work, the GPU's own idle time waiting for input, and
    where the host waited for the GPU (the call that found the launch queue full, or that
    synchronised: a DataLoader's fetch too, when the dataset reads GPU memory)."""
    inp = round(min(idle, parts.get("input", 0.0)), 4)
    waited = ", ".join(f"{k} {v:.2f} s" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))
    out = {"GPU work": round(max(0.0, train_s - inp), 4)}
    if inp > 0:
        out["input"] = inp
    return out, {"GPU work": f"the host ran {lead * 1e3:.0f} ms ahead and waited in: {waited}"}


def run_account(ev: ChildEvents, meta: dict[str, Any], steps: StepEvidence, carved: Carved,
                phases: list[PhaseEvidence], samples: Samples, cpu: CpuEvidence | None,
                threads: dict[int, ThreadSamples] | None, main_pid: int,
                loaders: list[LoaderInfo]) -> list[AccountEntry]:
    tl = timeline(ev, meta, carved)
    if tl is None:
        return []
    before, opened = own_start(ev, meta, tl)
    wall = tl.wall + before
    cut = subtract(carved.all, [(-1e18, tl.launch), (tl.exit, 1e18)])
    main = threads.get(main_pid) if threads else None
    out: list[AccountEntry] = []

    # Start-up: launch to the loop, less what was evaluation or a checkpoint in it, and gpubottle's
    # own start in the script's process and its probes' install at `import torch` (its line's).
    start_spans = subtract(subtract([(tl.launch, tl.loop_from)], cut), [opened] if opened else [])
    inst = probes_installed(ev, tl, opened)
    installed = overlap(inst[0], inst[1], start_spans) if inst else 0.0
    start_spans = subtract(start_spans, [inst]) if inst else start_spans
    parts = startup_parts(ev, tl, start_spans, main, loaders, own_known=opened is not None)
    # What the stacks saw of gpubottle's own work in start-up (its import watcher, consulted at
    # every import until the libraries it waits for come) is its line's too.
    sampled = parts[0].pop(OWN_STARTUP_PART, 0.0)
    installed += sampled
    where = next((site for name, site in parts[1].items()), None)
    out.append(_entry(STARTUP, max(0.0, sum(b - a for a, b in start_spans) - sampled), wall,
                      where=where, parts=parts[0], part_sites=parts[1]))

    # The loop's steps, net of evaluation and checkpoints.
    intervals = ev.clock.intervals()
    net = [sum(b - a for a, b in subtract([(max(lo, tl.loop_from), hi)], cut)) for lo, hi in intervals]
    keep = steps.measured_indices()
    typical = statistics.median(net[i] for i in keep) if keep else 0.0
    work = step_work(steps, net, any((lo.num_workers or 0) > 0 for lo in loaders if lo.batches))
    pauses = [i for i in steps.outliers if i < len(net)]
    between = sum(max(0.0, net[i] - typical) for i in pauses)
    lead = host_ahead(steps.device_s, steps.device_lag_s, steps.device_input_idle_s, steps.durations_s,
                      steps.input_wait_s, keep)
    if lead is None:
        # A step under a heavier probe is slowed by it, at most by the probe's own span: a census of
        # 0.18 s in a step that also waited 4 s for a pass over a loader is 0.18 s of gpubottle's.
        probed = merge([(float(p.t0), float(p.t1)) for p in ev.perturbed])
        heavy = probed_slowed(steps, work, keep, [overlap(*iv, probed) for iv in intervals])
        hooks = hooks_s(ev, steps.in_place)
        samplers = collectors_s(samples, cpu, wall)
        held = held_s(samples)
    else:  # the GPU sets the pace: the host's time in probes and samplers waited out its backlog
        heavy, hooks, samplers, held = device_slowed(steps, keep), 0.0, 0.0, 0.0
    gc_moved = moved_gc_s(ev)
    loop_s = sum(net)
    own = min(heavy + hooks + samplers + held + gc_moved, max(0.0, loop_s - between))
    train_s = max(0.0, loop_s - between - own)
    warm = min(warmup_excess(steps, net if lead is not None else work, keep, lead is not None), train_s)
    if warm < WARMUP_MIN_SHARE * wall:
        warm = 0.0
    loop_spans = subtract([(tl.loop_from, tl.loop_to)], cut)
    pause_spans = steps_spans(pauses, intervals)
    train_spans = subtract(loop_spans, pause_spans)
    train_main = without_evaluations(within(without_held({main_pid: main}, pause_spans), train_spans),
                                     *carved.loop_sites())[main_pid] if main is not None else None
    calls = timed_calls(ev, carved)
    unhooked = steps_spans(steps.unhooked, intervals)
    tparts, tsites = _train_parts(calls, train_spans, train_s, train_main,
                                  any(lo.off_loop_fetch_s is not None for lo in loaders), unhooked)
    # The training's work still queued on the device when the host ended its last step runs in the
    # host's tear-down: on the device's clock (the last step's lag), it is the training's.
    end_spans = subtract([(tl.loop_to, tl.exit)], cut)
    lags = [x for x in steps.device_lag_s if x is not None]
    drain = min(lags[-1], sum(b - a for a, b in end_spans)) if lags else 0.0
    train_s += drain
    if lead is not None:  # the host's calls mostly waited for the GPU: its work is the part
        tparts, tsites = _gpu_parts(tparts, train_s, lead, sum(x or 0.0 for x in steps.device_input_idle_s))
    compiled = 0.0  # of the warm-up, compiling (the stacks in those steps say)
    if warm > 0 and lead is None:  # the first steps' warm-up moves to start-up, from the parts it was in
        skip = set(steps.outliers) | set(steps.instrumented)
        early = [i for i in range(min(steps.warmup, len(intervals))) if i not in skip]
        tparts = without_warmup(tparts, warm, timed_excess(calls, intervals, early, keep))
        compiled = warm * compiling_share(main, [intervals[i] for i in early])
    elif warm > 0:  # on the device's clock the parts are the GPU's: they keep their mix
        kept = (train_s - warm) / train_s
        tparts = {k: round(x * kept, 4) for k, x in tparts.items()}
    if warm > 0:
        train_s -= warm
        first = out[0]
        moved = {WARMUP: round(warm - compiled, 4)}
        if compiled > 0:  # (compiling is compiling, before the first batch or in the first steps)
            moved[COMPILING] = round(first.parts.get(COMPILING, 0.0) + compiled, 4)
        out[0] = _entry(STARTUP, first.seconds + warm, wall, where=first.where,
                        parts={**first.parts, **moved}, part_sites=first.part_sites)
    # An inference loop (its steps the DataLoader's batches, no backward, no optimizer) is no training.
    inference = steps.source == "dataloader" and not ev.backwards and not ev.opt_steps
    out.append(_entry(TRAIN, train_s, wall, count=len(intervals), parts=tparts, part_sites=tsites,
                      what=INFERENCE if inference else None))

    for ph in phases:  # evaluation, per loader
        lo = ph.loader
        out.append(_entry(EVAL, ph.seconds, wall, where=lo.site if lo else None,
                          what=f"DataLoader at {lo.site}" if lo and lo.site else "DataLoader",
                          count=ph.passes, every_steps=ph.every_steps,
                          parts=_eval_parts(ph)))

    out += _mode_evals(carved, wall, len(intervals), ev.eval_calls)

    saves = loop_saves(ev)
    if saves:
        by_site: dict[str, float] = {}
        for s in saves:
            key = str(s.site or s.what)
            by_site[key] = by_site.get(key, 0.0) + overlap(float(s.t0), float(s.t1), cut)
        sizes = [int(s.bytes) for s in saves if s.bytes is not None]
        states = [int(s.state) for s in saves if s.state is not None and s.bytes is not None]
        top = max(by_site, key=lambda k: by_site[k])
        out.append(_entry(CHECKPOINT, sum(by_site.values()), wall, where=top, what=str(saves[0].what),
                          count=len(saves), every_steps=round(len(intervals) / len(saves), 2),
                          bytes=int(statistics.median(sizes)) if sizes else None,
                          parts={k: round(v, 4) for k, v in by_site.items()},
                          state_bytes=int(statistics.median(states)) if states else None))

    if pauses:
        what, where, called, n = spent_on(main, pause_spans)
        usual = in_steps_share(main, train_main, what) if main is not None else None
        every = regular_every(pauses, [max(0.0, net[i] - typical) for i in pauses])
        rows = gaps_row_loop(main, pause_spans, what)
        out.append(_entry(BETWEEN_STEPS, between, wall, count=len(pauses), where=where, what=what,
                          every_steps=every, samples=n if main is not None else None,
                          in_steps_share=usual, called_at=called,
                          row_loop=rows.site if rows else None, row_loop_text=rows.text if rows else None,
                          row_loop_share=rows.share if rows else None))

    stop = float(ev.end.t) if ev.end else tl.exit
    after_spans = subtract(end_spans, [(stop, 1e18)])
    after = max(0.0, sum(b - a for a, b in after_spans) - drain)
    leaving = max(0.0, tl.exit - max(stop, tl.loop_to))
    # What the script does after its last step (a report, an export, the profiler's events): the
    # stacks say, where they sampled it.
    what, where, _, _ = spent_on(main, after_spans) if after > 0 else (None, None, None, 0)
    rows = gaps_row_loop(main, after_spans, what) if after > 0 else None
    out.append(_entry(TEARDOWN, sum(b - a for a, b in end_spans) - drain, wall, where=where, what=what,
                      row_loop=rows.site if rows else None, row_loop_text=rows.text if rows else None,
                      row_loop_share=rows.share if rows else None,
                      parts={"after the last step": round(after, 4),
                             "exit (workers and interpreter)": round(leaving, 4)}))
    starting = before + (opened[1] - opened[0] if opened else 0.0)
    out.append(_entry(OWN, own + starting + installed, wall, parts={k: round(v, 4) for k, v in (
        ("its start (before the script's first line)", starting),
        ("its probes' install (at `import torch`) and import watcher", installed),
        ("heavier probes (profiler window, sync sites, censuses)", heavy),
        (HOOKS_PART, hooks), ("samplers (CPU the run could have had)", samplers),
        ("a due garbage collection it ran at the first step", gc_moved),
        ("memory reads (the script held meanwhile)", held)) if v > 0}))
    return out


# An evaluation pass's EvalCalls record is written at its train(), at most this long after the
# span's end as the phases read it.
EVAL_CALLS_LAG_S = 0.5


def _mode_evals(carved: Carved, wall: float, steps: int,
                counted: Sequence[EvalCalls] = ()) -> list[AccountEntry]:
    """Evaluations without a DataLoader, one entry per function that ran them (saves inside
    them are the checkpoints'), with their first pass's model calls where the probe counted them
    (`counted`: each recorded at the pass's train(), its span's end)."""
    by: dict[tuple[str | None, str | None], list[ModeSpan]] = {}
    for m in carved.mode_evals:
        by.setdefault((m.function, m.called_at or m.site), []).append(m)
    out = []
    for (function, where), spans in by.items():
        secs = sum(b - a for m in spans for a, b in subtract([(m.t0, m.t1)], carved.saves))
        name = f"{function}()" if function and function not in ("<module>", INLINE) else "the loop's code"
        # (the record comes at the train() that ends a pass: at or just after its span's end)
        c = next((c for m in spans for c in counted if m.t0 <= float(c.t) <= m.t1 + EVAL_CALLS_LAG_S), None)
        calls: dict[str, Any] = {} if c is None else {
            "model_calls": int(c.calls), "model_rows": int(c.rows), "model_site": c.site,
            "model_calls_capped": not c.whole}
        out.append(_entry(EVAL, secs, wall, where=where, what=f"{name} (model.eval() at "
                          f"{spans[0].site or '?'}, no DataLoader)", count=len(spans),
                          every_steps=round(steps / len(spans), 2) if steps else None,
                          function=function or "?", **calls))
    return out


def _eval_parts(ph: PhaseEvidence) -> dict[str, float]:
    """An evaluation's split: waiting for its batches (workers starting among it), and the rest."""
    wait = sum(ph.steps.input_wait_s)
    parts = {"input": wait, "workers starting": ph.start_up_s, "compute and other": ph.seconds - wait}
    if ph.start_up_s:
        parts["input"] = wait - ph.start_up_s
    return {k: round(v, 4) for k, v in parts.items() if v > 0}
