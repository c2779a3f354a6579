"""transfer-bound, compute-bound on the GPU (and a CPU-only trace's), launch-bound, sync-bound,
communication-bound, throttled and a device's memory, said."""

from __future__ import annotations

from gpubottle.evidence import GpuEvidence, NvmlDevice, Scripted
from gpubottle.report import Fact, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.compute.words import compile_call
from gpubottle.rules.gpu import decide as gd
from gpubottle.rules.gpu.decide import DevicePace, DeviceState, GpuCompute, Resident, Syncs, Transfer
from gpubottle.units import gib, ms, pct
from gpubottle.vocabulary import BREAKDOWN_LABELS


def breakdown_fact(g: GpuEvidence) -> Fact:
    parts = ", ".join(f"{BREAKDOWN_LABELS[k]} {pct(v)}" for k, v in g.breakdown.items() if v >= 0.001)
    return Fact(f"step {ms(g.step_s or 0)} ({g.steps} step(s)): {parts}")


def transfer_summary(d: Transfer) -> str:
    return (f"host<->device copies take {pct(d.share)} of step time"
            + (f", {pct(d.pageable)} of it from pageable memory" if d.pin else ""))


def transfer_facts(d: Transfer) -> list[Fact]:
    g = d.gpu
    facts = [Fact(f"host<->device copies take {pct(d.share)} of each {ms(g.step_s or 0)} step",
                  "copy_share", round(d.share, 4))]
    total = sum(c.seconds for c in g.copies) or 1.0
    for c in g.copies[:3]:
        size = f", {gib(c.bytes)}" if c.bytes else ""
        facts.append(Fact(f"{c.direction} from {c.memory} memory: {c.count} copies, "
                          f"{ms(c.seconds)}{size} ({pct(c.seconds / total)} of copy time)"))
    return facts


def resident_fix(r: Resident) -> Fix:
    return Fix(text=f"the whole dataset ({r.samples} samples x {gib(r.per_sample_bytes)} = "
                    f"{gib(r.whole_bytes)}) fits in the GPU's {gib(r.free_bytes)} of free memory: move it "
                    "to the GPU once, before training, and index whole batches there in the loop "
                    "(x[idx] with a tensor of indices: no per-step copy at all); not sample by sample "
                    "in a Dataset's __getitem__, where each int() or .item() waits for the GPU",
                    where=r.site)


def transfer_fixes(d: Transfer) -> list[Fix]:
    fixes: list[Fix] = []
    if d.pin:
        fixes.append(Fix(
            text="copy from pinned memory, asynchronously: DataLoader(pin_memory=True) and "
            "batch.to(device, non_blocking=True)",
            where=d.loader_site, change={"pin_memory": [False, True]} if d.pin_change else {}))
    if d.dtoh_every_step:
        fixes.append(Fix(text="device-to-host copies every step (.cpu(), .item(), .numpy()): keep "
                              "metrics on the GPU and read them every N steps"))
    if d.resident is not None:
        fixes.append(resident_fix(d.resident))
    fixes.append(Fix(text="send less: send uint8 images (a quarter of float32) and convert/normalise "
                          "on the GPU, or crop/resize before the copy"))
    return fixes


def precision_facts(g: GpuEvidence) -> list[Fact]:
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


def compute_facts(d: GpuCompute) -> list[Fact]:
    return [Fact(f"GPU kernels are busy {pct(d.kernel_share)} of the step", "kernel_share",
                 round(d.kernel_share, 4)), breakdown_fact(d.gpu), *precision_facts(d.gpu)]


def math_fixes(d: GpuCompute, names: list[str] | None = None, scripted: Scripted | None = None,
               twice: str | None = None) -> list[Fix]:
    """Faster math, in the order the kernel names suggest. `names`: the script's names for its
    modules, `scripted`: the model is TorchScript (compile_call)."""
    autocast = (f"run the matmuls in {d.half} on the tensor cores: "
                f"torch.autocast('cuda', dtype=torch.{d.half.split()[0]})")
    tf32 = Fix(text="let float32 matmuls use TF32 tensor cores: "
                    "torch.backends.cuda.matmul.allow_tf32 = True, torch.backends.cudnn.allow_tf32 = True")
    compiled = compile_call(names, scripted=scripted, twice=twice)
    fuse = Fix(text=f"fuse kernels with {compiled}; raise the batch size if memory allows")
    if d.mix == gd.HALF_MATMULS:
        mm = d.gpu.matmul_share or 0.0
        return [Fix(text=f"matmuls already run in half precision on the tensor cores; the other kernels "
                         f"take {pct(1 - mm)} of kernel time: fuse them with {compiled}, or "
                         "raise the batch size if memory allows")]
    if d.mix == gd.FP32_MATMULS:
        autocast = (f"{pct(d.gpu.matmul_precision['fp32'])} of matmul time runs in float32 without "
                    "tensor cores: " + autocast)
    return [Fix(text=autocast), tf32, fuse] if d.ampere else [Fix(text=autocast), fuse]


def float64_fix() -> Fix:
    """Not measured on a GPU here: a try. (Consumer GPUs run float64 at 1/32-1/64 of float32's rate;
    datacenter ones at 1/2, and neither on the tensor cores float32 matmuls can use.)"""
    return Fix(text="the model trains in float64 (double): GPUs run it at a fraction of float32's "
                    "rate and never on the tensor cores: model.float(), and float32 inputs "
                    "(torch.from_numpy(a).float()); try it, where the model does not need double "
                    "precision")


def compute_summary(d: GpuCompute) -> str:
    return f"GPU kernels keep the device busy {pct(d.kernel_share)} of step time"


def cpu_trace_summary(ops: float) -> str:
    return f"operators on the CPU take {pct(ops)} of step time: the loop is compute-bound"


# Fixes without inputs are functions, not shared constants: each finding gets its own Fix.
def cpu_trace_fix() -> Fix:
    # A trace does not say the CPU it ran on: bf16 is said with its condition (rules/compute/words.py).
    return Fix(text="run the math faster: torch.compile(model), bfloat16 autocast "
                    "(torch.autocast('cpu', dtype=torch.bfloat16); on a CPU without bf16 "
                    "instructions it is slower: time it), or a GPU")


def launch_facts(g: GpuEvidence, host_idle: float) -> list[Fact]:
    return [Fact(f"the GPU sits idle with no work submitted {pct(host_idle)} of the step (outside "
                 "DataLoader waits): the host is not keeping it fed", "idle_host_share",
                 round(host_idle, 4)), breakdown_fact(g)]


def launch_fix(names: list[str] | None = None, scripted: Scripted | None = None,
               twice: str | None = None) -> Fix:
    mode = ", mode=" + repr("reduce-overhead")
    return Fix(text=f"cut per-step host work: {compile_call(names, mode, scripted, twice)} "
                    "(CUDA graphs), fewer small ops, larger batches; move Python logging and metric "
                    "code off the step")


def launch_summary(host_idle: float) -> str:
    return f"the GPU waits on the host {pct(host_idle)} of step time"


def sync_facts(d: Syncs) -> list[Fact]:
    facts: list[Fact] = []
    g = d.gpu
    if g is not None and g.sync_share:
        calls = ", ".join(f"{s.call} x{s.count} ({ms(s.seconds)})" for s in g.syncs[:3])
        facts.append(Fact(f"the GPU idles after the host's synchronising calls {pct(g.sync_share)} of "
                          f"the step: {calls}", "sync_share", round(g.sync_share, 4)))
    facts += [Fact(f"{s.location} synchronises with the GPU {s.per_step:.1f}x per step"
                   + (f" (in {s.call})" if s.call else "")) for s in d.sites[:3]]
    return facts


def sync_fixes(d: Syncs) -> list[Fix]:
    if d.sites:
        return [Fix(text="this line makes the host wait for the GPU (.item(), .cpu(), printing a "
                         "tensor, a blocking copy): keep the value on the GPU and read it every N "
                         "steps", where=d.sites[0].location)]
    return [Fix(text="remove per-step synchronisation: .item(), .cpu(), printing tensors, "
                     "torch.cuda.synchronize(); `gpubottle run` names the file:line on a GPU machine")]


def sync_summary(d: Syncs) -> str:
    if d.costly:
        return (f"the GPU idles after the host's synchronising calls {pct(d.share or 0.0)} of "
                "step time")
    return f"the host waits for the GPU at {len(d.sites)} place(s) in every step"


def communication_facts(g: GpuEvidence, exposed: float) -> list[Fact]:
    return [Fact(f"communication takes {pct(g.communication_share or 0.0)} of the step, "
                 f"{pct(g.communication_overlap or 0.0)} of it overlapped with compute",
                 "communication_exposed", round(exposed, 4)), breakdown_fact(g)]


def communication_fix() -> Fix:
    return Fix(text="overlap gradient all-reduce with backward (DDP bucket_cap_mb, "
                    "gradient_as_bucket_view=True), or communicate less often (no_sync for "
                    "accumulation steps)")


def communication_summary(exposed: float) -> str:
    return f"communication not hidden under compute costs {pct(exposed)} of step time"


def power_capped_summary(s: DeviceState) -> str:
    return (f"{s.device.label} held its power limit {pct(s.power_capped or 0.0)} of the time "
            "(software power cap): the normal state of a GPU at full load")


def power_fact(d: NvmlDevice) -> Fact:
    return Fact(f"power {d.power_mean_w or 0:.0f} W of {d.power_limit_w or 0:.0f} W; SM clock "
                f"{d.sm_clock_mean or 0:.0f} MHz on average")


def throttled_summary(s: DeviceState) -> str:
    reasons = ", ".join(f"{k} {pct(x)} of the time" for k, x in s.throttled.items())
    return f"{s.device.label} slowed its clocks: {reasons}"


def clocks_fact(d: NvmlDevice) -> Fact:
    return Fact(f"SM clock {d.sm_clock_mean or 0:.0f} MHz on average, {d.sm_clock_max or 0:.0f} "
                f"at most; {d.temp_max or 0:.0f} C peak; power {d.power_mean_w or 0:.0f} W of "
                f"{d.power_limit_w or 0:.0f} W")


def throttle_fix() -> Fix:
    return Fix(text="check cooling and power limits (nvidia-smi -q -d PERFORMANCE); a shared or "
                    "hot machine gives slower, noisier steps")


def pace_summary(d: DevicePace) -> str:
    return (f"the GPU sets the pace: each step takes {ms(d.step_s)} on the device's own clock, and the "
            "host has queued the next work before it is done")


def pace_fact(d: DevicePace) -> Fact:
    return Fact(f"at each step's end the host has queued {ms(d.lag_s)} of work the GPU has not run yet "
                f"(median of {d.n} steps; CUDA events on the script's stream)", "device_lag_s",
                round(d.lag_s, 6))


BUSY_QUESTION = ("NVML's utilization is the time any kernel ran, however small: a loop of many tiny "
                 "kernels the host barely keeps up with reads the same; the profiler window "
                 "(--profile-window on) tells them apart")


def busy_summary(d: NvmlDevice) -> str:
    return f"{d.label} runs kernels {pct(d.util_mean or 0.0)} of the time: the run is compute-bound"


def busy_fact(d: NvmlDevice) -> Fact:
    util = d.util_mean or 0.0
    return Fact(f"NVML utilization {pct(util)} on average (10th percentile {pct(d.util_p10 or 0)})",
                "gpu_util", round(util, 4))


def busy_fix(names: list[str] | None = None, scripted: Scripted | None = None,
             twice: str | None = None) -> Fix:
    return Fix(text="use the tensor cores: bfloat16 autocast and TF32 matmuls "
                    "(torch.backends.cuda.matmul.allow_tf32 = True); "
                    + compile_call(names, scripted=scripted, twice=twice))


def memory_full_summary(s: DeviceState) -> str:
    return f"{s.device.label} memory reached {pct(s.memory_full or 0.0)} (all processes)"


def memory_full_fact(d: NvmlDevice) -> Fact:
    return Fact(f"{gib(d.mem_used_peak or 0)} of {gib(d.mem_total or 0)} used on the device; this run "
                f"{gib(d.proc_mem_peak or 0)}")


def memory_full_fix() -> Fix:
    return Fix(text="other processes share this GPU, or the run's own peak is close to the "
                    "limit: free the device or lower the batch")
