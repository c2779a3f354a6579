"""Assemble the evidence of a run from its run directory (also after a crash, from what was written)."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpubottle.analysis.account import run_account
from gpubottle.analysis.collate_samples import sample_loop
from gpubottle.analysis.cpu import cpu_evidence
from gpubottle.analysis.debug import debug_settings
from gpubottle.analysis.double_backward import double_backward
from gpubottle.analysis.eval_autograd import eval_autograd
from gpubottle.analysis.eval_mode import eval_mode_training
from gpubottle.analysis.evaluation import eval_phases
from gpubottle.analysis.forward_loops import (
    bag_lookups,
    cell_loops,
    per_sample_inner,
    sibling_modules,
    untrained,
)
from gpubottle.analysis.gil import busy_threads, main_thread_shares
from gpubottle.analysis.growth import step_growth
from gpubottle.analysis.loaders import loader_infos, start_up_waits
from gpubottle.analysis.loop_source import feeds_back, first_naming, grads_per_call, split_site, to_backward
from gpubottle.analysis.memory import (
    filling_buffers,
    graph_growth,
    heap_growth,
    kept_growth,
    leak_evidence,
    linear_fit,
    memory_evidence,
)
from gpubottle.analysis.memory_format import channels_last_site
from gpubottle.analysis.nvml import nvml_evidence
from gpubottle.analysis.optimizers import optimizer_work, rebuilt_optimizer, subnormal_look
from gpubottle.analysis.param_penalty import param_penalty
from gpubottle.analysis.phases import Carved, Span, carve, merge, overlap, steps_spans, subtract
from gpubottle.analysis.producers import producer_evidence, producer_threads
from gpubottle.analysis.recompute import checkpoint_recompute
from gpubottle.analysis.sample_random import same_every_epoch
from gpubottle.analysis.samples import Samples, loader_workers, only_processes, read_samples, subtree
from gpubottle.analysis.scripted import scripted
from gpubottle.analysis.slice_losses import slice_loss
from gpubottle.analysis.sparse_inputs import sparse_inputs
from gpubottle.analysis.stack_users import stack_evidence
from gpubottle.analysis.stacks import (
    ThreadSamples,
    in_script,
    is_blocking,
    merge_speedscope,
    read_chunks,
    unsampled_steps,
    within,
    without_evaluations,
    without_held,
    without_saves,
)
from gpubottle.analysis.steps import step_evidence
from gpubottle.analysis.zero_grads import grads_discarded, grads_for_another
from gpubottle.collect.events import ChildEvents, read_events
from gpubottle.collect.system import CoreBudget
from gpubottle.evidence import (
    BackwardAgain,
    CallSite,
    CollectorStatus,
    CpuEvidence,
    CudaMemoryEvidence,
    DenseTable,
    Evidence,
    GpuEvidence,
    JobInfo,
    MathInUse,
    MemoryContents,
    ModelCallCount,
    Recompiled,
    RunInfo,
    SliceLoss,
    StackEvidence,
    StepEvidence,
    StepGrowth,
    SyncSite,
)
from gpubottle.probes.device_clock import BUDGET
from gpubottle.rundir import RunDir
from gpubottle.wire import CudaSample


@dataclass
class RankPart:
    """What build_evidence needs to analyse one rank of a run directory."""

    rank: int
    on_node: int  # ranks of the job on the same machine (they share its cores)


def _median(xs: list[float]) -> float | None:
    return float(statistics.median(xs)) if xs else None


def _again(a: list[Any] | None, ev: ChildEvents, steps: StepEvidence) -> BackwardAgain | None:
    """The counted step's backward passes over one forward, with backward's share of the measured
    steps' time (every backward call's, clipped to them)."""
    if not a:
        return None
    lo, hi = steps.measured_from, steps.measured_to
    share = None
    if lo is not None and hi is not None and hi > lo:
        spent = overlap(lo, hi, sorted((float(b.t0), float(b.t1)) for b in ev.backwards))
        share = round(min(1.0, spent / (hi - lo)), 4)
    return BackwardAgain(str(a[0]), a[1], int(a[2]), int(a[3]), int(a[4]), [x for x in a[5] or ()], share)


def _collectors(meta: dict[str, Any], ev: ChildEvents, sampler_ok: bool) -> dict[str, CollectorStatus]:
    out: dict[str, CollectorStatus] = {}
    if ev.start is None:
        out["probes"] = CollectorStatus(False, "the script's process never reported (it failed to start)")
    elif ev.torch is None:
        out["torch-hooks"] = CollectorStatus(False, "the script did not import torch")
    for name, reason in ev.probes.items():
        out[f"torch-{name}"] = CollectorStatus(reason is None, reason)
    for name, reason in ev.failures.items():  # probes that broke while the script ran
        out[name] = CollectorStatus(False, reason)
    seen, skipped, spent = ev.device_budget
    if skipped and "device-clock" not in out:
        out["device-clock"] = CollectorStatus(True, None, (
            f"the GPU's own clock timed {seen} of {seen + skipped} steps: its CUDA events took "
            f"{spent / max(1, seen) * 1e6:.0f} us a timed step here, so it kept to {BUDGET:.1%} of the run "
            "by leaving steps unseen (the GPU's per-step times are from the steps it timed)"))
    errs = meta.get("sampler_errors") or []
    out["psutil"] = CollectorStatus(sampler_ok, "; ".join(errs[:3]) if errs else None)
    for name, st in (meta.get("collectors") or {}).items():
        out[name] = CollectorStatus(bool(st.get("ok")), st.get("reason"), st.get("budget"))
    return out


def _threads(rd: RunDir, pids: set[int]) -> tuple[dict[int, ThreadSamples] | None, str | None]:
    """The script's (or one rank's) stack samples, every one with its time (only its own
    processes' chunks, `pids`, are read), and the merged speedscope file for viewers."""
    if not os.path.isfile(os.path.join(rd.stacks, "chunks.jsonl")):
        return None, None
    merged = os.path.join(rd.stacks, "profile.speedscope.json")
    if not os.path.isfile(merged):
        merge_speedscope(rd.stacks, merged)
    return read_chunks(rd.stacks, pids), merged if os.path.isfile(merged) else None


def _gil(cpu: CpuEvidence, samples: Samples, stack_dir: str, main_pid: int, main: ThreadSamples | None,
         measured: list[Span] | None, intervals: list[Span]) -> None:
    """The script's Python threads busy beside the loop, and the loop thread's samples in a wait."""
    if main is not None and main.stacks:
        cpu.main_waiting_samples = round(
            sum(1 for st in main.stacks if st and is_blocking(st[-1])) / len(main.stacks), 4)
    if not measured or not samples.threads:
        return
    start_up = (min(float(r.t) for r in samples.threads), intervals[0][0]) if intervals else None
    cpu.busy_threads = busy_threads(samples.threads, stack_dir, main_pid, (measured[0][0], measured[-1][1]),
                                    start_up)
    shares = main_thread_shares(samples.cpu, main_pid, start_up) if start_up and cpu.busy_threads else None
    if shares is not None:
        cpu.startup_main_ran, cpu.startup_main_queued = (round(x, 4) for x in shares)


def _producers(stacks: StackEvidence, main: ThreadSamples | None, sampled: dict[int, ThreadSamples],
               others: set[int]) -> None:
    """A loop that receives its batches from a producer: the wait (`main`'s samples), and the run's
    other processes (`others`: not DataLoader workers; for a rank, the processes below it)."""
    if main is None:
        return
    producers = {pid: ts for pid, ts in sampled.items() if pid in others}
    producer_evidence(stacks, [st for st in main.stacks if in_script(st)], producers)


def _cuda_memory(ev: ChildEvents, window: tuple[float | None, float | None] = (None, None)
                 ) -> CudaMemoryEvidence | None:
    if ev.cuda_peak is None and ev.cuda_end is None and ev.oom is None:
        return None
    out = CudaMemoryEvidence(oom=ev.oom, snapshot=ev.snapshot)
    if ev.cuda_peak is not None:
        p = ev.cuda_peak
        out.device, out.peak_allocated_bytes, out.peak_reserved_bytes = p.device, p.allocated, p.reserved
    if ev.cuda_end is not None:
        e = ev.cuda_end
        out.device = e.device
        out.peak_allocated_bytes = max(out.peak_allocated_bytes or 0, e.peak_allocated) or None
        out.peak_reserved_bytes = max(out.peak_reserved_bytes or 0, e.peak_reserved) or None
        out.total_bytes = e.total
        if ev.oom is not None:
            out.oom_allocated_bytes, out.oom_reserved_bytes, out.oom_free_bytes = (
                e.allocated, e.reserved, e.free)
    out.contents = _contents(ev)
    _gpu_growth(out, ev.cuda_series, window)
    return out


def _gpu_growth(out: CudaMemoryEvidence, series: list[CudaSample],
                window: tuple[float | None, float | None]) -> None:
    """Allocated CUDA memory against time over the measured steps: a leak is a steady climb."""
    lo, hi = window
    pts = [(float(s.t), float(s.allocated)) for s in series
           if (lo is None or s.t >= lo) and (hi is None or s.t <= hi)]
    if len(pts) < 3:
        return
    slope, r2 = linear_fit([p[0] for p in pts], [p[1] for p in pts])
    out.growth_bytes_per_s, out.growth_r2 = round(slope, 1), round(r2, 4)
    out.growth_samples, out.growth_span_s = len(pts), round(pts[-1][0] - pts[0][0], 3)
    out.last_allocated_bytes = int(pts[-1][1])


def _contents(ev: ChildEvents) -> MemoryContents | None:
    for moment in ("oom", "step"):
        got = ev.cuda_contents.get(moment)
        if got is None or not isinstance(got.contents, dict):
            continue
        c = got.contents
        return MemoryContents(
            moment=moment, step=got.step, weights_bytes=int(c.get("weights", 0)),
            gradients_bytes=int(c.get("gradients", 0)),
            optimizer_state_bytes=int(c.get("optimizer_state", 0)),
            other_python_bytes=int(c["other_python"]) if c.get("scanned") else None,
            optimizers=list(c.get("optimizers", [])), top_tensors=list(c.get("top_tensors", [])))
    return None


def _window(path: str) -> GpuEvidence | None:
    if not os.path.isfile(path):
        return None
    from gpubottle.trace.gpu import gpu_evidence
    from gpubottle.trace.load import analyse_file

    tf = analyse_file(path)
    g = gpu_evidence(tf.data, tf.bd, tf.read.meta)
    if g is not None:
        g.source = "profiler-window"
    return g


def _growth(ev: ChildEvents, steps: StepEvidence, carved: Carved, threads: dict[int, ThreadSamples] | None,
            main_pid: int, samples: Samples) -> StepGrowth | None:
    """The steps' trend (analysis/growth.py), epochs told by the training loaders' last batches."""
    ends = sorted(b.t1 for b in carved.training_batches(list(ev.batches)) if b.ended)
    main = threads.get(main_pid) if threads is not None else None
    key = str(main_pid)
    ran = [(float(c.t), float(c.main_thread[key])) for c in samples.cpu
           if c.main_thread and key in c.main_thread]
    return step_growth(ev.clock.intervals(), steps.net_durations(), steps.measured_indices(), ends, main,
                       ran, steps.input_wait_s, [(float(o.t), float(o.cores)) for o in samples.outside])


def _feeds_back_at(site: str | None, cwd: str | None, test: Callable[[tuple[str, int]], bool] = feeds_back
                   ) -> bool:
    """loop_source.feeds_back (or `test`) at a model call's "file:line" (relative to the run's
    directory)."""
    at = split_site(site, cwd)
    return at is not None and test(at)


def build_evidence(rd: RunDir, events: ChildEvents | None = None, rank: RankPart | None = None,
                   samples: Samples | None = None) -> Evidence:
    """The evidence of the run's script, or with `rank` of one rank of a multi-process job (its
    events, its processes' samples and stacks, its profiler window, its share of the cores).
    `events`, `samples`: when already read (a job's ranks share one samples file)."""
    meta = rd.read_meta()
    events_path = rd.rank_events(rank.rank) if rank is not None else rd.events
    ev = events if events is not None else read_events(events_path)
    if samples is None:
        samples = read_samples(rd.samples)
    main_pid = int(ev.start.pid) if ev.start else int(meta.get("child_pid") or -1)
    if rank is not None:
        samples = only_processes(samples, subtree(samples, main_pid))
    carved = carve(ev)  # evaluation passes and checkpoints: phases of their own
    steps = step_evidence(ev, carved)
    loaders, group_of = loader_infos(ev, carved.eval_batches, carved.off_loop)
    by_id = {lo.id: lo for lo in loaders}
    for p in carved.passes:  # complete training epochs: how many batches an epoch yields
        lo = by_id.get(group_of.get(p.loader, p.loader))
        if lo is not None and p.ended and not p.eval:
            got = [b for b in p.batches if not b.ended]
            lo.epoch_batches.append(len(got))
            # (the first batch's wait is the workers' start, said apart: not the reads')
            waits = [float(b.t1) - float(b.t0) for b in got[1:]]
            if waits:
                lo.epoch_wait_s.append(round(sum(waits) / len(waits), 6))
    steps.start_up_wait_s = start_up_waits(ev, loaders, group_of, ev.clock.intervals(),
                                           carved.eval_batches)
    workers = loader_workers(samples, main_pid, ev)
    budget = CoreBudget(**meta["cores"]) if meta.get("cores") else CoreBudget(None, None, None)
    if rank is not None:  # ranks on one machine share its cores: each may count on its part
        budget = budget.shared(rank.on_node)
    window = (steps.measured_from, steps.measured_to)
    # The training's own evidence: its measured steps, less evaluation and checkpoints, and less
    # the pauses the step statistics leave out (a key sorted at each epoch's start, 28% of a run,
    # read as "76% of each step" by the stacks inside them).
    intervals = ev.clock.intervals()
    paused = steps_spans(steps.outliers, intervals)
    measured = (subtract([(steps.measured_from, steps.measured_to)], merge(carved.all + paused))
                if steps.measured_from is not None and steps.measured_to is not None else None)
    cpu = cpu_evidence(samples, main_pid, workers, budget, measured, meta.get("sample_interval"))
    cpu.bf16, cpu.fp16 = meta.get("cpu_bf16"), meta.get("cpu_fp16")
    if ev.torch:
        cpu.torch_threads = int(ev.torch.threads)
        cpu.torch_interop_threads = int(ev.torch.interop_threads)
        cpu.thread_env = dict(ev.torch.env_threads or {})
    for t in ev.threads_set:  # the script's own setting, the last one made
        if t.threads is not None:
            cpu.torch_threads, cpu.threads_site, cpu.threads_source = int(t.threads), t.site, t.source
        if t.interop_threads is not None:
            cpu.torch_interop_threads = int(t.interop_threads)
    memory = memory_evidence(samples, main_pid, workers, steps.measured_from, steps.measured_to,
                             carved.all)
    if memory is not None:
        memory.leak = leak_evidence(ev.leak_censuses)
        memory.heap = heap_growth(ev.leak_censuses)
        memory.buffers = filling_buffers(ev.leak_censuses)
        memory.censuses = len(ev.leak_censuses)
        memory.kept = kept_growth(ev.leak_censuses)
        memory.graph = graph_growth(ev.leak_censuses)
    exit_code = meta.get("exit_code") if rank is None else end_exit_code(ev)
    exception = None
    if ev.end and ev.end.how == "exception":
        exception = ev.end.detail
    run = RunInfo(
        kind="run",
        command=list(meta.get("command") or []),
        target=meta.get("target"),
        cwd=meta.get("cwd"),
        run_dir=rd.path,
        started_at=meta.get("started_at"),
        duration_s=meta.get("duration_s"),
        exit_code=exit_code,
        signal=meta.get("signal") if rank is None else None,
        stop_reason=(meta.get("stop_reason") if rank is None else None) or _stop_reason(ev, exit_code),
        exception=exception,
        python=meta.get("python"),
        torch_version=str(ev.torch.version) if ev.torch else None,
        platform=meta.get("platform"),
        collectors=_collectors(meta, ev, sampler_ok=len(samples.cpu) > 0),
        job=_job(meta, ev) if rank is None else None,
        cells=dict(meta.get("cells") or {}),
    )
    threads = None
    stacks = None
    main_stacks: list[Any] | None = None  # the main thread's samples in the measured steps
    try:
        # The run's other processes (`samples` holds a rank's own only): producers the loop may
        # wait on, their chunks read with the main process's and the workers' in one pass.
        others = {int(p) for r in samples.cpu for p in r.cores} - {main_pid} - workers
        threads, merged = _threads(rd, {main_pid} | workers | others)
        if threads is not None:
            sampled = without_evaluations(within(without_held(threads, paused), measured),
                                          *carved.loop_sites())
            training = without_saves(sampled) if carved.saves else sampled
            stacks = stack_evidence(training, main_pid, workers, merged)
            main_stacks = training[main_pid].stacks if main_pid in training else None
            _gil(cpu, samples, rd.stacks, main_pid, training.get(main_pid), measured, intervals)
            _producers(stacks, training.get(main_pid), sampled, others)
            if stacks.main_wait_from_process is False:  # a queue or a pool its own threads fill
                mine = within(read_chunks(rd.stacks, {main_pid}, others=True), measured)
                producer_threads(stacks, mine.get(main_pid))
            spy = run.collectors.get("py-spy")
            a, b = window
            if spy and spy.ok and not stacks.samples_main and a is not None and b is not None:  # (said)
                gap = unsampled_steps(rd.stacks, main_pid, (a, b), float(meta.get("started_mono") or 0))
                spy.note = "; ".join(x for x in (spy.note, gap) if x) or None
    except Exception as exc:  # unreadable stacks are missing evidence
        run.collectors["py-spy-analysis"] = CollectorStatus(False, repr(exc))
    out = Evidence(run=run, steps=steps, loaders=loaders, cpu=cpu, memory=memory, stacks=stacks,
                   debug=debug_settings(ev, steps.measured_from, steps.measured_to),
                   optimizer_rebuilt=rebuilt_optimizer(ev, len(steps.durations_s)),
                   optimizer_work=optimizer_work(ev, steps),
                   model_calls=next((ModelCallCount(m.module, m.site, int(m.calls), m.rows,
                                                    [str(n) for n in m.called or ()],
                                                    list(m.repeat) if m.repeat else None,
                                                    bool(m.repeat_grad) if m.repeat else None,
                                                    [DenseTable(*t) for t in m.tables or ()],
                                                    [untrained(u) for u in m.untrained or ()],
                                                    _again(m.again, ev, steps),
                                                    cell_loops(m.cells, _median(steps.durations_s)),
                                                    per_sample_inner(m.inner, int(m.calls)),
                                                    param_penalty(m.params),
                                                    scripted(m.module, m.site, run.cwd,
                                                             [str(n) for n in m.called or ()]))
                                     for m in ev.model_calls), None),
                   math_in_use=[MathInUse(m.kind, m.detail, m.site) for m in ev.math_modes],
                   recompiled=[Recompiled(str(f[0]), f[1], int(f[2]), str(f[3]))
                               for f in (ev.recompiles.functions if ev.recompiles else [])],
                   params_dtype=next((o.dtype for o in reversed(ev.optimizers) if o.dtype), None),
                   subnormals=[subnormal_look(r) for r in ev.subnormals],
                   torch_import_site=ev.torch.import_site if ev.torch else None)
    # (the script and the file of the model's call: where a gradient penalty is written)
    sources = [run.target, *(m.site.rsplit(":", 1)[0] for m in ev.model_calls if m.site)]
    out.double_backward = double_backward(sources, run.cwd)
    out.channels_last = channels_last_site(sources, run.cwd)
    out.packs_sequences = first_naming(sources, run.cwd, ("pack_padded_sequence", "pack_sequence"))
    mc = out.model_calls
    if mc is not None:
        mc.feeds_back = _feeds_back_at(mc.site, run.cwd)
        mc.grads_per_call = _feeds_back_at(mc.site, run.cwd, grads_per_call)
        m0 = next(iter(ev.model_calls))
        if mc.repeat:
            mc.repeat_updated = bool(m0.repeat_updated) if m0.repeat_updated is not None else None
            mc.repeat_backward = _feeds_back_at(mc.repeat[1], run.cwd, to_backward)
        mc.sites = [CallSite(c[0], c[1], int(c[2]), int(c[3]), bool(c[4]), float(c[5]))
                    for c in m0.sites or ()]
        mc.counted_s = m0.counted_s
        mc.siblings = sibling_modules(m0.siblings, main_stacks)
        mc.sparse = sparse_inputs(m0.sparse, mc.called, run.cwd)
        mc.bags = bag_lookups(m0.inner, run.cwd)
        # (from each line that called an outermost module: the most called may be a loss module,
        # `crit` once per time step, and the model's line another)
        found = next((f for f in (slice_loss(site, run.cwd) for site in dict.fromkeys(
            [mc.site, *(c.site for c in mc.sites)])) if f is not None), None)
        if found is not None:
            shape = [int(d) for d in m0.out_shape] if m0.out_shape else None
            mc.slice_loss = SliceLoss(found.site, found.header, found.tensor, found.index, found.dim,
                                      found.function, shape, found.call, found.target)
    for lo in loaders:
        if lo.dataset_getitem and not lo.iterable:
            lo.same_every_epoch = same_every_epoch(os.path.join(run.cwd or "", lo.dataset_getitem))
        if lo.collate_fn and lo.same_every_epoch:
            files = [s.rpartition(":")[0] for s in (lo.site, lo.dataset_getitem) if s]
            loop = sample_loop(files, lo.collate_fn, run.cwd)
            if loop is not None:
                lo.collate_loop, lo.collate_loop_text = loop.site, loop.header
    try:
        out.step_growth = _growth(ev, steps, carved, threads, main_pid, samples)
    except Exception as exc:  # a trend that cannot be read is missing evidence
        run.collectors["step-growth"] = CollectorStatus(False, repr(exc))
    try:
        out.phases = eval_phases(carved, loaders, group_of, samples, threads, main_pid, budget,
                                 meta.get("sample_interval"), len(steps.durations_s))
        out.account = run_account(ev, meta, steps, carved, out.phases, samples, cpu, threads,
                                  main_pid, loaders)
    except Exception as exc:  # an account that cannot be made is missing evidence
        run.collectors["account"] = CollectorStatus(False, f"the run's account failed: {exc!r}")
    for e in out.account:
        if e.model_site:  # (an evaluation's model call, counted)
            e.model_feeds_back = _feeds_back_at(e.model_site, run.cwd)
    end = float(ev.end.t) if ev.end else meta.get("ended_mono")
    if end is not None:
        out.eval_autograd = eval_autograd(ev, samples, main_pid, carved.saves,
                                          float(meta.get("duration_s") or 0.0), float(end),
                                          [(p.t0, p.t1) for p in carved.passes if p.eval])
    out.eval_mode = eval_mode_training(ev)
    out.grads_discarded = grads_discarded(ev)
    out.grads_for_another = grads_for_another(ev)
    out.recompute = checkpoint_recompute(ev)
    uses_cuda = bool(ev.cuda_devices or ev.cuda_peak or ev.cuda_end or ev.oom)
    reading = nvml_evidence(rd.gpu_samples, window,
                            [str(d[1]) for d in ev.cuda_devices.values() if d[1]], uses_cuda)
    out.nvml = reading.devices
    if reading.problems:
        run.collectors["nvml-devices"] = CollectorStatus(False, "; ".join(reading.problems)[:600])
    out.cuda_memory = _cuda_memory(ev, window)
    sites = ev.sync_sites.sites if ev.sync_sites is not None else []
    out.sync_sites = [SyncSite(location=str(row[0]), per_step=float(row[1]),
                               call=str(row[2]) if len(row) > 2 and row[2] else None,
                               function=str(row[3]) if len(row) > 3 and row[3] else None) for row in sites]
    try:
        out.gpu = _window(rd.rank_window(rank.rank) if rank is not None else rd.window_trace)
    except Exception as exc:  # an unreadable window trace is missing evidence
        run.collectors["profiler-window"] = CollectorStatus(False, f"unreadable trace: {exc!r}")
    return out


def _job(meta: dict[str, Any], ev: ChildEvents) -> JobInfo | None:
    """The job this run is one rank of, as meta.json recorded it (launch/job.py), or as the script's
    own init_process_group said (a rank with nothing in its environment)."""
    raw = meta.get("job")
    r = ev.rank
    if not isinstance(raw, dict) and r is not None and r.launcher == "init_process_group" and r.world_size:
        return JobInfo(rank=int(r.rank), world_size=int(r.world_size), job_id=str(r.job or "job"),
                       node=r.node, local_rank=r.local_rank, launcher=str(r.launcher))
    if not isinstance(raw, dict):
        return None
    try:
        return JobInfo(rank=int(raw["rank"]), world_size=int(raw["world_size"]), job_id=str(raw["job_id"]),
                       node=raw.get("node"), local_rank=raw.get("local_rank"), launcher=raw.get("launcher"),
                       folder=raw.get("folder"))
    except (KeyError, TypeError, ValueError):
        return None


def _stop_reason(ev: ChildEvents, exit_code: int | None) -> str | None:
    if ev.end is None:  # no word from the script's end: killed, or left by os._exit()
        if exit_code is None or exit_code < 0:
            return "killed"
        return "completed" if exit_code == 0 else "failed"
    how, detail = ev.end.how, ev.end.detail
    if how == "stopped":
        return str(detail)
    if how == "completed":
        return "completed"
    if how == "exception":
        return "interrupted" if str(detail).startswith("KeyboardInterrupt") else "failed"
    if how == "exit":
        return "completed" if end_exit_code(ev) == 0 else "failed"
    return None


def end_exit_code(ev: ChildEvents) -> int | None:
    """The exit status the process's own End record tells (None: it ended without a word)."""
    if ev.end is None:
        return None
    if ev.end.how in ("completed", "stopped"):
        return 0
    if ev.end.how == "exception":
        return 1  # Python's status for an uncaught exception
    if ev.end.how == "exit":
        detail = str(ev.end.detail)
        if detail == "None":
            return 0
        try:
            return int(detail)
        except ValueError:
            return 1  # sys.exit("message")
    return None
