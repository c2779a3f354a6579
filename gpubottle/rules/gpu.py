"""GPU rules, from a profiler trace (a user's, or the window `run` profiles): transfer-bound,
compute-bound on the GPU, and the findings beside them (sync-bound,
launch-bound, communication-bound)."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.collect.nvml import NORMAL_AT_FULL_LOAD
from gpubottle.evidence import Evidence, GpuEvidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import main_loader
from gpubottle.units import gib, ms, pct
from gpubottle.vocabulary import BREAKDOWN_LABELS


def _gpu(ev: Evidence) -> GpuEvidence | None:
    g = ev.gpu
    return g if g is not None and g.uses_gpu and g.step_s and g.steps else None


def _profiled(ev: Evidence) -> GpuEvidence | None:
    """Profiler evidence with or without a GPU (a CPU-only trace still has its breakdown)."""
    g = ev.gpu
    return g if g is not None and g.step_s and g.steps else None


def breakdown_fact(g: GpuEvidence) -> Fact:
    parts = ", ".join(f"{BREAKDOWN_LABELS[k]} {pct(v)}" for k, v in g.breakdown.items() if v >= 0.001)
    return Fact(f"step {ms(g.step_s or 0)} ({g.steps} step(s)): {parts}")


def transfer_bound(ev: Evidence) -> list[Finding]:
    g = _gpu(ev)
    if g is None or g.copy_share is None or g.step_s is None:
        return []
    share = g.copy_share
    if share < th.INPUT_WAIT_INFO or share * g.step_s < th.COPY_FLOOR_S:
        return []
    facts = [Fact(f"host<->device copies take {pct(share)} of each {ms(g.step_s)} step",
                  "copy_share", round(share, 4))]
    total = sum(c.seconds for c in g.copies) or 1.0
    for c in g.copies[:3]:
        size = f", {gib(c.bytes)}" if c.bytes else ""
        facts.append(Fact(f"{c.direction} from {c.memory} memory: {c.count} copies, "
                          f"{ms(c.seconds)}{size} ({pct(c.seconds / total)} of copy time)"))
    pageable = sum(c.seconds for c in g.copies if c.memory == "pageable") / total
    lo = main_loader(ev)
    fixes: list[Fix] = []
    if pageable >= th.PAGEABLE_SHARE:
        fixes.append(Fix(
            text="copy from pinned memory, asynchronously: DataLoader(pin_memory=True) and "
            "batch.to(device, non_blocking=True)",
            where=lo.site if lo else None,
            change={"pin_memory": [False, True]} if lo and lo.pin_memory is not True else {},
        ))
    dtoh = sum(c.seconds for c in g.copies if c.direction == "DtoH") / total
    if dtoh >= th.DTOH_SHARE:
        fixes.append(Fix(text="device-to-host copies every step (.cpu(), .item(), .numpy()): keep "
                              "metrics on the GPU and read them every N steps"))
    resident = _dataset_fits_on_gpu(ev, g)
    if resident is not None:
        fixes.append(resident)
    fixes.append(Fix(text="send less: send uint8 images (a quarter of float32) and convert/normalise "
                          "on the GPU, or crop/resize before the copy"))
    return [Finding(v.TRANSFER_BOUND, th.severity_for_share(share), round(share, 4),
                    f"host<->device copies take {pct(share)} of step time"
                    + (f", {pct(pageable)} of it from pageable memory" if pageable >= th.PAGEABLE_SHARE
                     else ""),
                    facts, fixes)]


def _free_gpu_bytes(ev: Evidence, g: GpuEvidence) -> int | None:
    m = ev.cuda_memory
    if m is not None and m.total_bytes and m.peak_reserved_bytes:
        return m.total_bytes - m.peak_reserved_bytes
    for d in ev.nvml:
        if d.mem_total and d.mem_used_peak:
            return d.mem_total - d.mem_used_peak
    if g.total_memory_bytes and g.peak_reserved_bytes:
        return g.total_memory_bytes - g.peak_reserved_bytes
    return None


def _dataset_fits_on_gpu(ev: Evidence, g: GpuEvidence) -> Fix | None:
    """The whole dataset, at the bytes per sample the copies show, fits in the GPU's free memory:
    copy it once instead of every step."""
    lo = main_loader(ev)
    htod = sum(c.bytes or 0 for c in g.copies if c.direction == "HtoD")
    free = _free_gpu_bytes(ev, g)
    if lo is None or not lo.batch_size or not lo.dataset_len or not htod or not g.steps or not free:
        return None
    per_sample = htod / g.steps / lo.batch_size
    whole = per_sample * lo.dataset_len
    if whole > th.DATASET_GPU_FRACTION * free:
        return None
    return Fix(text=f"the whole dataset ({lo.dataset_len} samples x {gib(per_sample)} = {gib(whole)}) "
                    f"fits in the GPU's {gib(free)} of free memory: move it to the GPU once, before "
                    "training, and index batches there (no per-step copy at all)",
               where=lo.site)


def gpu_compute_bound(ev: Evidence) -> list[Finding]:
    cpu_trace = _profiled(ev)
    if cpu_trace is not None and not cpu_trace.uses_gpu and ev.run.kind == "trace":
        return _cpu_trace_compute_bound(cpu_trace)
    g = _gpu(ev)
    if g is None or g.kernel_share is None or g.kernel_share < th.GPU_COMPUTE_BUSY:
        return []
    if g.breakdown.get("dataloader", 0.0) >= th.INPUT_WAIT_WARNING:
        return []  # input-bound: the input rules speak for this run
    facts = [Fact(f"GPU kernels are busy {pct(g.kernel_share)} of the step", "kernel_share",
                  round(g.kernel_share, 4)), breakdown_fact(g)]
    facts += _precision_facts(g)
    fixes = _math_fixes(g)
    return [Finding(v.COMPUTE_BOUND, "info", round(g.kernel_share, 4),
                    f"GPU kernels keep the device busy {pct(g.kernel_share)} of step time",
                    facts, fixes)]


def _cpu_trace_compute_bound(g: GpuEvidence) -> list[Finding]:
    """A CPU-only trace whose steps are mostly operators: the model's math on the CPU sets the pace
    (a run measures this from the loop's thread; a trace has only its operator spans)."""
    ops = g.breakdown.get("cpu_op", 0.0)
    if ops < th.GPU_COMPUTE_BUSY or g.breakdown.get("dataloader", 0.0) >= th.INPUT_WAIT_WARNING:
        return []
    return [Finding(v.COMPUTE_BOUND, "info", round(ops, 4),
                    f"operators on the CPU take {pct(ops)} of step time: the loop is compute-bound",
                    [breakdown_fact(g)],
                    [Fix(text="run the math faster: torch.compile(model), bfloat16 autocast "
                              "(torch.autocast('cpu', dtype=torch.bfloat16)), or a GPU")])]


def _precision_facts(g: GpuEvidence) -> list[Fact]:
    if not g.matmul_share or not g.matmul_precision:
        return []
    mix = ", ".join(f"{k} {pct(v)}" for k, v in g.matmul_precision.items() if v >= 0.01)
    facts = [Fact(f"matmuls, convolutions and attention take {pct(g.matmul_share)} of kernel time "
                  f"({mix})", "matmul_share", g.matmul_share)]
    if g.unclassified_kernel_share is not None and g.unclassified_kernel_share >= th.KERNELS_UNNAMED:
        facts.append(Fact(f"{pct(g.unclassified_kernel_share)} of kernel time is in kernels whose names "
                          "gpubottle does not recognise: the split above leaves them out",
                          "unclassified_kernel_share", g.unclassified_kernel_share))
    if g.top_kernels:
        name, share = g.top_kernels[0]
        facts.append(Fact(f"the busiest kernel is {name} ({pct(share)} of kernel time)"))
    return facts


def _math_fixes(g: GpuEvidence) -> list[Fix]:
    """Faster math, in the order the kernel names suggest."""
    cc = g.compute_capability
    ampere = cc is None or not cc[:1].isdigit() or int(cc.split(".")[0]) >= 8
    half = "bfloat16" if ampere else "float16 (with torch.amp.GradScaler)"
    autocast = Fix(text=f"run the matmuls in {half} on the tensor cores: "
                        f"torch.autocast('cuda', dtype=torch.{half.split()[0]})")
    tf32 = Fix(text="let float32 matmuls use TF32 tensor cores: "
                    "torch.backends.cuda.matmul.allow_tf32 = True, torch.backends.cudnn.allow_tf32 = True")
    fuse = Fix(text="fuse kernels with torch.compile(model); raise the batch size if memory allows")
    mix, mm = g.matmul_precision, g.matmul_share or 0.0
    if mm >= th.MATMUL_SHARE_MIN and mix.get("fp32", 0.0) >= th.PRECISION_MAJORITY:
        autocast.text = (f"{pct(mix['fp32'])} of matmul time runs in float32 without tensor cores: "
                         + autocast.text)
        return [autocast, tf32, fuse] if ampere else [autocast, fuse]
    if mm >= th.MATMUL_SHARE_MIN and mix.get("half", 0.0) >= th.PRECISION_MAJORITY:
        fuse.text = (f"matmuls already run in half precision on the tensor cores; the other kernels "
                     f"take {pct(1 - mm)} of kernel time: fuse them with torch.compile(model), or "
                     "raise the batch size if memory allows")
        return [fuse]
    return [autocast, tf32, fuse] if ampere else [autocast, fuse]


def launch_bound(ev: Evidence) -> list[Finding]:
    g = _gpu(ev)
    if g is None or g.idle_host_share is None or g.step_s is None:
        return []
    host_idle = g.idle_host_share
    # Time the loop spends waiting for batches is the input rules' to explain, not launch overhead.
    host_idle -= g.breakdown.get("dataloader", 0.0)
    if host_idle < th.HOST_IDLE_WARNING or host_idle * g.step_s < th.COPY_FLOOR_S:
        return []
    facts = [
        Fact(f"the GPU sits idle with no work submitted {pct(host_idle)} of the step (outside "
             "DataLoader waits): the host is not keeping it fed", "idle_host_share", round(host_idle, 4)),
        breakdown_fact(g),
    ]
    fixes = [Fix(text="cut per-step host work: torch.compile(model, mode='reduce-overhead') (CUDA "
                      "graphs), fewer small ops, larger batches; move Python logging and metric "
                      "code off the step")]
    return [Finding(v.LAUNCH_BOUND, "warning", round(host_idle, 4),
                    f"the GPU waits on the host {pct(host_idle)} of step time", facts, fixes)]


def sync_bound(ev: Evidence) -> list[Finding]:
    g = _gpu(ev)
    sites = ev.sync_sites
    costly = (g is not None and g.sync_share is not None and g.step_s is not None
              and g.sync_share >= th.SYNC_WARNING and g.sync_share * g.step_s >= th.SYNC_FLOOR_S)
    if not costly and not sites:
        return []
    facts: list[Fact] = []
    if g is not None and g.sync_share:
        calls = ", ".join(f"{s.call} x{s.count} ({ms(s.seconds)})" for s in g.syncs[:3])
        facts.append(Fact(f"the host blocks in synchronising calls {pct(g.sync_share)} of the step: "
                          f"{calls}", "sync_share", round(g.sync_share, 4)))
    for s in sites[:3]:
        facts.append(Fact(f"{s.location} synchronises with the GPU {s.per_step:.1f}x per step"))
    if sites:
        fixes = [Fix(text="this line makes the host wait for the GPU (.item(), .cpu(), printing a "
                          "tensor, a blocking copy): keep the value on the GPU and read it every N "
                          "steps", where=sites[0].location)]
    else:
        fixes = [Fix(text="remove per-step synchronisation: .item(), .cpu(), printing tensors, "
                          "torch.cuda.synchronize(); `gpubottle run` names the file:line on a GPU machine")]
    if costly and g is not None and g.sync_share is not None:
        return [Finding(v.SYNC_BOUND, "warning", round(g.sync_share, 4),
                        f"the host waits for the GPU in synchronising calls {pct(g.sync_share)} of "
                        "step time", facts, fixes)]
    return [Finding(v.SYNC_BOUND, "info", None,
                    f"the host waits for the GPU at {len(sites)} place(s) in every step", facts, fixes)]


def communication(ev: Evidence) -> list[Finding]:
    g = _profiled(ev)
    if g is None or not g.communication_share:
        return []
    exposed = g.communication_share * (1 - (g.communication_overlap or 0.0))
    if exposed < th.COMM_EXPOSED_WARNING:
        return []
    facts = [Fact(f"communication takes {pct(g.communication_share)} of the step, "
                  f"{pct(g.communication_overlap or 0.0)} of it overlapped with compute",
                  "communication_exposed", round(exposed, 4)), breakdown_fact(g)]
    fixes = [Fix(text="overlap gradient all-reduce with backward (DDP bucket_cap_mb, "
                      "gradient_as_bucket_view=True), or communicate less often (no_sync for "
                      "accumulation steps)")]
    return [Finding(v.COMMUNICATION_BOUND, "warning", round(exposed, 4),
                    f"communication not hidden under compute costs {pct(exposed)} of step time",
                    facts, fixes)]


def nvml_findings(ev: Evidence) -> list[Finding]:
    """What NVML alone shows: throttling, and busy kernels when no profiler window ran."""
    out: list[Finding] = []
    for d in ev.nvml:
        if d.role not in ("run", "parent"):
            continue  # another tenant's GPU: its clocks do not set this run's pace
        costly = {k: v for k, v in d.throttle.items() if v >= th.THROTTLE_SHARE
                  and k not in NORMAL_AT_FULL_LOAD}
        capped = d.throttle.get("sw-power-cap", 0.0)
        if not costly and capped >= th.THROTTLE_SHARE:
            out.append(Finding(
                v.THROTTLED, "info", None, f"{d.label} held its power limit {pct(capped)} of the time "
                "(software power cap): the normal state of a GPU at full load",
                [Fact(f"power {d.power_mean_w or 0:.0f} W of {d.power_limit_w or 0:.0f} W; SM clock "
                      f"{d.sm_clock_mean or 0:.0f} MHz on average")]))
        if costly:
            reasons = ", ".join(f"{k} {pct(v)} of the time" for k, v in costly.items())
            out.append(Finding(
                v.THROTTLED, "warning", None, f"{d.label} slowed its clocks: {reasons}",
                [Fact(f"SM clock {d.sm_clock_mean or 0:.0f} MHz on average, {d.sm_clock_max or 0:.0f} "
                      f"at most; {d.temp_max or 0:.0f} C peak; power {d.power_mean_w or 0:.0f} W of "
                      f"{d.power_limit_w or 0:.0f} W")],
                [Fix(text="check cooling and power limits (nvidia-smi -q -d PERFORMANCE); a shared or "
                          "hot machine gives slower, noisier steps")],
            ))
    w = ev.measured()
    waits = w.wait_share if w is not None else 0.0
    busy = [d for d in ev.nvml if d.util_mean is not None and d.role == "run"]
    if _gpu(ev) is None and busy and waits < th.INPUT_WAIT_WARNING:
        d = max(busy, key=lambda x: x.util_mean or 0.0)
        util = d.util_mean or 0.0
        if util >= th.NVML_BUSY:
            out.append(Finding(
                v.COMPUTE_BOUND, "info", round(util, 4),
                f"{d.label} runs kernels {pct(util)} of the time: the run is compute-bound",
                [Fact(f"NVML utilization {pct(util)} on average (10th percentile {pct(d.util_p10 or 0)})",
                      "gpu_util", round(util, 4))],
                [Fix(text="use the tensor cores: bfloat16 autocast and TF32 matmuls "
                          "(torch.backends.cuda.matmul.allow_tf32 = True); torch.compile(model)")],
            ))
    for d in ev.nvml:
        if d.role != "run":
            continue  # another tenant's full GPU is context, never this run's verdict
        if d.mem_used_peak and d.mem_total and d.mem_used_peak / d.mem_total >= th.GPU_MEM_CRITICAL:
            out.append(Finding(
                v.OOM_RISK, "warning", None,
                f"{d.label} memory reached {pct(d.mem_used_peak / d.mem_total)} (all processes)",
                [Fact(f"{gib(d.mem_used_peak)} of {gib(d.mem_total)} used on the device; this run "
                      f"{gib(d.proc_mem_peak or 0)}")],
                [Fix(text="other processes share this GPU, or the run's own peak is close to the "
                          "limit: free the device or lower the batch")],
            ))
    return out
