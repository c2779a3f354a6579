"""gpubottle's own line in the run's account: its samplers' CPU where the cores they shared with
the run had none to spare, the time its memory reads held the script's main thread, the probes'
calls in the script's threads, its own start before the script's first line, and (on a run the GPU
paces) the device time its heavier probes left idle. analysis/account.py puts them in the account."""

from __future__ import annotations

import statistics
from typing import Any

from gpubottle.analysis.hooks_cost import own_time_s
from gpubottle.analysis.phases import Span, Timeline
from gpubottle.analysis.samples import Samples
from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import CpuEvidence, InPlaceCost, StepEvidence, item_at
from gpubottle.stats import quantile

# Below this the machine has a core to spare for gpubottle's samplers: they displace nothing.
SPARE_CORES = 0.5


def collectors_s(samples: Samples, cpu: CpuEvidence | None, wall: float) -> float:
    """The run's time gpubottle's samplers (its own process and py-spy) took from it: their CPU,
    where the cores they shared with the run had none to spare (else they ran beside it and took
    nothing). Those cores are the machine's, or, where the run may use fewer (an affinity mask, a
    cgroup's cpuset or quota: a cluster's job, `taskset`), the run's own, which the samplers
    inherit: there a busy run loses their CPU however idle the rest of the machine is."""
    if cpu is None or not cpu.cores_logical:
        return 0.0
    own = statistics.fmean(r.cores for r in samples.own) if samples.own else 0.0
    helpers = statistics.fmean(r.helpers for r in samples.outside) if samples.outside else 0.0
    ours = own + helpers
    pool = cpu.cores_available
    if pool is not None and cpu.ranks_sharing == 1 and pool <= cpu.cores_logical - SPARE_CORES:
        busy = min(pool, (cpu.tree_cores or 0.0) + ours)
        if pool - busy >= SPARE_CORES:
            return 0.0
    else:
        if cpu.system_cores is None or cpu.cores_logical - cpu.system_cores >= SPARE_CORES:
            return 0.0
        busy = cpu.system_cores
    # Sharing saturated cores, the run loses the part of them the samplers hold.
    return wall * ours / max(busy, ours, 1e-9)


def held_s(samples: Samples) -> float:
    """The time the sampler's memory reads (smaps_rollup, every 5 or 30 s) held the script's busy
    main thread blocked: its allocations wait on the walk's lock whether or not a core was spare.
    Measured by the sampler around each read (OwnSample.stalled_s, a running total)."""
    return max((r.stalled_s or 0.0 for r in samples.own), default=0.0)


def step_work(steps: StepEvidence, net: list[float], workers: bool) -> list[float]:
    """Each step's time (`net`: of evaluation and checkpoints) less what it sat waiting for a batch
    off the loading thread's CPU: the workers' pace (`workers`: the loop's batches come from worker
    processes; a wait whose CPU was not read counts whole), or the main thread's own loading
    waiting on storage. That wait is the loader's, whatever else ran in the step."""
    out = []
    for i, n in enumerate(net):
        wait = steps.input_wait_s[i] if i < len(steps.input_wait_s) else 0.0
        cpu = item_at(steps.input_wait_cpu_s, i)
        idle = wait - cpu if cpu is not None else (wait if workers else 0.0)
        out.append(n - max(0.0, idle))
    return out


def probed_slowed(steps: StepEvidence, work: list[float], keep: list[int], probed_s: list[float]) -> float:
    """What gpubottle's heavier probes cost the steps they ran in: each step's own work (step_work)
    beyond a typical step's, at most the probe's own span in it (`probed_s`, by step index). A run
    that waits on its workers waited as long with the probe as without: a zip archive re-opened
    for every sample made every third step wait 3 s, and the profiler window's steps (2.7 s against
    a typical 0.3, by their whole time) read as 2.4 s of gpubottle's in a 45-s run."""
    if not keep:
        return 0.0
    # Beyond the steps' own spread: where they vary by their batches (a GRU's bucketed sequences,
    # 8 to 200 long: 10 ms to 0.9 s), the step a probe fell on may be a long one anyway (its
    # 0.94 s read as 0.9 s of gpubottle's, where the probe's hooks cost it ~2 us a module call).
    # A steady run's 90th percentile is its median give or take its noise.
    typical = quantile([work[i] for i in keep], SPREAD_QUANTILE)
    return sum(min(max(0.0, work[i] - typical), probed_s[i])
               for i in steps.instrumented if i < len(work) and i < len(probed_s))


SPREAD_QUANTILE = 0.9  # a probed step's work beyond this quantile of the kept steps' is the probe's


def device_slowed(steps: StepEvidence, keep: list[int]) -> float:
    """What gpubottle's heavier probes cost a run the GPU paces: the device's time in the steps
    they slowed beyond its typical step (the GPU left idle because the host fell behind)."""
    seen = [d for i in keep if (d := item_at(steps.device_s, i)) is not None]
    if not seen:
        return 0.0
    typical = statistics.median(seen)
    # (a warm-up step under them is the warm-up's: the device's first steps autotune and create
    # handles whatever the host does, and the probes cost a GPU-paced step nothing measurable)
    return sum(max(0.0, d - typical) for i in steps.instrumented
               if i >= steps.warmup and (d := item_at(steps.device_s, i)) is not None)


def hooks_s(ev: ChildEvents, in_place: InPlaceCost | None = None) -> float:
    """The probes' calls in the script's threads: the hot hooks and the step-boundary probes as
    they timed themselves, or, where the run measured them in place (blocks of steps without them:
    what they cost the loop's code around them too), that cost over the steps they ran in,
    whichever is more; every other record at its calibrated price (older runs: every record at a
    fetch's) and the writer thread's CPU."""
    cost = ev.probe_cost
    if cost is None:
        return 0.0
    rest = max(0, int(cost.calls) - int(cost.timed))
    hot = own_time_s(cost)
    if in_place is not None and in_place.resolved:
        hot = max(hot, in_place.per_step_s * in_place.hooked_steps)
    return hot + float(cost.per_call_s) * rest + float(cost.writer_cpu_s)


def moved_gc_s(ev: ChildEvents) -> float:
    """The full garbage collection gpubottle ran at the script's first step, where one was due
    (probes/gc_phase.py): gpubottle's wherever the GPU paces the loop (one step's host time, well
    beyond any backlog it could hide in)."""
    cost = ev.probe_cost
    return float(cost.moved_gc_s) if cost is not None else 0.0


# Longer than this before the script's launch is not gpubottle starting (a clock read wrong).
OWN_START_MAX_S = 30.0


def own_start(ev: ChildEvents, meta: dict[str, Any], tl: Timeline) -> tuple[float, Span | None]:
    """gpubottle's own start, a cost of the run the script waited through: `gpubottle run`'s
    process from its start to the script's launch (before the run's launch: the account's wall
    grows by it), and in the script's process the span from its first statement to the script's
    first line (gpubottle's imports and probes: moved out of start-up). Zero and None where the
    run does not say (an older run; gpubottle.profile(), which starts in the user's process)."""
    before = 0.0
    began = meta.get("process_start_mono")
    if began is not None and not meta.get("in_process") and 0 <= tl.launch - float(began) <= OWN_START_MAX_S:
        before = tl.launch - float(began)
    cost = ev.probe_cost
    if cost is None or not cost.began_t or not tl.launch <= cost.began_t < cost.script_t <= tl.exit:
        return before, None
    return before, (float(cost.began_t), float(cost.script_t))


def probes_installed(ev: ChildEvents, tl: Timeline, opened: Span | None) -> Span | None:
    """When the probes were installed, as the script imported torch: in the run, and after
    gpubottle's start (a torch imported before the script's first line is in that span)."""
    cost = ev.probe_cost
    if cost is None or not cost.installed_t0:
        return None
    t0, t1 = float(cost.installed_t0), float(cost.installed_t1)
    if not tl.launch <= t0 < t1 <= tl.exit or (opened is not None and t0 < opened[1]):
        return None
    return (t0, t1)
