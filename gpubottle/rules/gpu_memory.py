"""oom-risk on the GPU: the run died of CUDA OOM, or its memory came near the device's capacity.

What fills the memory picks the fix. Activations (everything beyond weights, gradients and optimizer
state) scale with the batch, so the batch that fits is computed from the measured split; model state
does not shrink with the batch at all, and then the fix is sharding, precision or a leaner optimizer.
"""

from __future__ import annotations

import math
import re

from gpubottle import vocabulary as v
from gpubottle.evidence import CudaMemoryEvidence, Evidence, LoaderInfo, MemoryContents
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import main_loader
from gpubottle.rules.memory_decision import named_leak
from gpubottle.rules.memory_words import leak_words
from gpubottle.units import duration, gib, pct

# c10's format_size prints up to 1024 bytes as "N bytes", then KiB/MiB/GiB with two decimals.
_REQUEST = re.compile(r"Tried to allocate ([\d.]+) ?(bytes|B|KiB|MiB|GiB|TiB)\b")
_UNITS = {"bytes": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def requested_bytes(message: str) -> int | None:
    """The allocation that failed, from torch's OutOfMemoryError message."""
    m = _REQUEST.search(message)
    return int(float(m.group(1)) * _UNITS[m.group(2)]) if m else None


def _contents_fact(c: MemoryContents, allocated: int) -> Fact | None:
    if c.model_state_bytes <= 0 or allocated <= 0:
        return None
    opt = "/".join(c.optimizers) or "optimizer"
    rest = max(0, allocated - c.model_state_bytes)
    parts = [f"weights {gib(c.weights_bytes)}", f"gradients {gib(c.gradients_bytes)}",
             f"{opt} state {gib(c.optimizer_state_bytes)}"]
    if c.other_python_bytes is not None:
        held = min(rest, c.other_python_bytes)
        parts.append(f"tensors referenced from Python (batches, outputs) {gib(held)}")
        parts.append(f"autograd's saved activations and other {gib(rest - held)}")
    else:
        parts.append(f"activations and other {gib(rest)}")
    when = "at the OOM" if c.moment == "oom" else "after warm-up, with the activations at their peak"
    return Fact(f"what filled it ({when}): " + ", ".join(parts), "activation_share",
                round(rest / allocated, 4))


def _held_from_python(c: MemoryContents, allocated: int) -> tuple[Fact, Fix] | None:
    """The biggest group of same-shaped tensors the script still referenced, when it is big."""
    if not c.top_tensors or allocated <= 0:
        return None
    top = c.top_tensors[0]
    label, size = str(top[0]), int(top[1])
    count = int(top[2]) if len(top) > 2 else 1
    if size < th.HELD_TENSORS_MIN * allocated:
        return None
    if count > 1:
        fact = Fact(f"{count} tensors of {label} referenced from Python hold {gib(size)} "
                    f"({pct(size / allocated)} of the allocated memory)", "held_from_python", size)
        fix = Fix(text=f"something keeps {count} tensors of {label} alive (a list that grows every "
                       "step: outputs, losses or histories kept without .detach() or .item()): keep "
                       "only what is needed, detached, or move it to the CPU")
    else:
        fact = Fact(f"one tensor of {label} referenced from Python holds {gib(size)} "
                    f"({pct(size / allocated)} of the allocated memory)", "held_from_python", size)
        fix = Fix(text=f"the {label} tensor is {gib(size)}: free it (del, or keep it on the CPU) "
                       "before training, or make it smaller")
    return fact, fix


def _fitting_batch(lo: LoaderInfo, m: CudaMemoryEvidence, c: MemoryContents) -> tuple[int, str] | None:
    """The largest power-of-two batch whose activations fit beside the model state."""
    if not lo.batch_size or lo.batch_size < 2 or m.oom_allocated_bytes is None:
        return None
    capacity = (m.oom_reserved_bytes or 0) + (m.oom_free_bytes or 0)
    if capacity <= 0:
        return None
    need = m.oom_allocated_bytes + (requested_bytes(m.oom or "") or 0)
    activations = need - c.model_state_bytes
    budget = th.GPU_BATCH_HEADROOM * capacity - c.model_state_bytes
    if activations <= 0 or budget <= 0:
        return None
    factor = budget / activations
    if factor >= 1:
        return None
    batch = 2 ** int(math.floor(math.log2(max(1.0, lo.batch_size * factor))))
    why = (f"activations need {gib(activations)} at batch {lo.batch_size}; "
           f"{gib(budget)} is left beside the model state")
    return batch, why


def _fixes(ev: Evidence, m: CudaMemoryEvidence, allocated: int) -> list[Fix]:
    c = m.contents
    lo = main_loader(ev)
    state_share = c.model_state_bytes / allocated if c is not None and allocated > 0 else 0.0
    batch_fix: list[Fix] = []
    if lo is not None and lo.batch_size and lo.batch_size > 1:
        fitted = _fitting_batch(lo, m, c) if (m.oom and c is not None) else None
        if fitted is not None and fitted[0] >= 1:
            new, why = fitted
            steps = max(1, lo.batch_size // new)
            batch_fix.append(Fix(
                text=f"lower the batch to {new} and accumulate gradients over {steps} steps to keep "
                     f"the effective batch ({why})",
                where=lo.site, change={"batch_size": [lo.batch_size, new]}))
        else:
            batch_fix.append(Fix(
                text="halve the batch and accumulate gradients over two steps to keep the "
                     "effective batch", where=lo.site,
                change={"batch_size": [lo.batch_size, lo.batch_size // 2]}))
    activations = [Fix(text="lower activation memory: bfloat16 autocast, activation checkpointing "
                            "(torch.utils.checkpoint) on the largest blocks")]
    state: list[Fix] = []
    if c is not None and state_share >= th.MODEL_STATE_NOTE:
        state.append(Fix(
            text=f"the model state alone takes {gib(c.model_state_bytes)} ({pct(state_share)}); "
                 "it does not shrink with the batch: shard it across GPUs (FSDP, ZeRO), keep "
                 "weights in bfloat16, or use an optimizer with less state (8-bit Adam, "
                 "Adafactor; SGD with momentum keeps half of Adam's)"))
    if state_share >= th.MODEL_STATE_FIRST:
        return state + batch_fix + activations
    return batch_fix + activations + state


def _fragmentation(reserved: int | None, allocated: int | None, total: int | None) -> list[Fact]:
    if not reserved or not allocated or not total:
        return []
    slack = reserved - allocated
    if slack > th.FRAGMENTATION_SLACK * total or (
            reserved > th.FRAGMENTATION_RATIO * allocated and slack > th.FRAGMENTATION_SLACK_MIN * total):
        return [Fact(f"{gib(slack)} reserved by the allocator but not in tensors: fragmentation",
                     "fragmentation_bytes", slack)]
    return []


_FRAG_FIX = Fix(text="reduce fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
_SNAPSHOT_FIX = Fix(text="to see every allocation and its Python stack, rerun with "
                         "`gpubottle run --memory-snapshot` and open the .pickle at "
                         "pytorch.org/memory_viz")


def _others(ev: Evidence, total: int) -> list[Fact]:
    """Memory other processes held on the device (NVML), which the allocator could not have."""
    out = []
    for d in ev.nvml:
        if d.role == "run" and d.mem_used_peak and d.proc_mem_peak is not None and d.mem_total:
            other = d.mem_used_peak - d.proc_mem_peak
            if other > th.OTHER_PROCESSES_MIN * (total or d.mem_total):
                out.append(Fact(f"other processes held up to {gib(other)} on {d.label}"))
    return out


def cuda_oom(ev: Evidence) -> list[Finding]:
    """From the allocator inside the script: an OOM, or a peak near the device's capacity."""
    m = ev.cuda_memory
    if m is None:
        return []
    total = m.total_bytes or 0
    if m.oom:
        facts = [Fact(f"the run died: {m.oom.splitlines()[0][:300]}")]
        extra_fixes: list[Fix] = []
        allocated = m.oom_allocated_bytes or 0
        if m.oom_allocated_bytes is not None and total:
            facts.append(Fact(
                f"at that moment tensors held {gib(allocated)}, the allocator reserved "
                f"{gib(m.oom_reserved_bytes or 0)} of {gib(total)}"
                + (f", {gib(m.oom_free_bytes)} free" if m.oom_free_bytes is not None else "")))
        if m.contents is not None:
            fact = _contents_fact(m.contents, allocated)
            facts += [fact] if fact else []
            held = _held_from_python(m.contents, allocated)
            if held is not None:
                facts.append(held[0])
                extra_fixes.append(held[1])
        frag = _fragmentation(m.oom_reserved_bytes, m.oom_allocated_bytes, total)
        facts += frag + _others(ev, total)
        fixes = extra_fixes + _fixes(ev, m, allocated) + ([_FRAG_FIX] if frag else [])
        if not m.snapshot:
            fixes.append(_SNAPSHOT_FIX)
        return [Finding(v.OOM_RISK, "critical", None, "the run died of CUDA out-of-memory", facts, fixes)]
    if not total or not m.peak_reserved_bytes:
        return []
    used = m.peak_reserved_bytes / total
    if used < th.GPU_MEM_WARNING:
        return []
    allocated = m.peak_allocated_bytes or 0
    facts = [Fact(f"the CUDA allocator reserved up to {gib(m.peak_reserved_bytes)} of "
                  f"{gib(total)} ({pct(used)}); tensors peaked at {gib(allocated)}",
                  "gpu_memory_fraction", round(used, 4))]
    if m.contents is not None:
        fact = _contents_fact(m.contents, allocated)
        facts += [fact] if fact else []
    frag = _fragmentation(m.peak_reserved_bytes, allocated, total)
    facts += frag + _others(ev, total)
    fixes = _fixes(ev, m, allocated) + ([_FRAG_FIX] if frag else [])
    severity = "critical" if used >= th.GPU_MEM_CRITICAL else "warning"
    return [Finding(v.OOM_RISK, severity, None, f"GPU memory reached {pct(used)} of the device",
                    facts, fixes)]


def gpu_memory(ev: Evidence) -> list[Finding]:
    """From a profiler trace's memory events; a run's allocator readings (cuda_oom) are better."""
    g = ev.gpu
    if ev.cuda_memory is not None or g is None or not g.uses_gpu or not g.total_memory_bytes:
        return []
    cap = g.total_memory_bytes
    peak = g.peak_reserved_bytes or (None if g.allocated_relative else g.peak_allocated_bytes)
    if not peak:
        return []
    used = peak / cap
    if used < th.GPU_MEM_WARNING:
        return []
    facts = [Fact(f"GPU memory peaked at {gib(peak)} reserved of {gib(cap)} ({pct(used)})",
                  "gpu_memory_fraction", round(used, 4))]
    fixes = [Fix(text="lower peak memory: smaller batch with gradient accumulation, activation "
                      "checkpointing, bfloat16 autocast")]
    allocated = None if g.allocated_relative else g.peak_allocated_bytes
    frag = _fragmentation(g.peak_reserved_bytes, allocated, cap)
    if frag:
        facts += frag
        fixes.append(_FRAG_FIX)
    severity = "critical" if used >= th.GPU_MEM_CRITICAL else "warning"
    return [Finding(v.OOM_RISK, severity, None, f"GPU memory reached {pct(used)} of the device",
                    facts, fixes)]


def gpu_growth(ev: Evidence) -> list[Finding]:
    """Allocated CUDA memory climbing steadily over the measured steps: the OOM is coming."""
    m = ev.cuda_memory
    if m is None or m.oom or not m.total_bytes or m.growth_bytes_per_s is None:
        return []
    g, r2 = m.growth_bytes_per_s, m.growth_r2 or 0.0
    if (g < th.GPU_GROWTH_MIN_BYTES_PER_S or r2 < th.GROWTH_MIN_R2
            or m.growth_samples < th.GPU_GROWTH_MIN_SAMPLES
            or g * (m.growth_span_s or 0.0) < th.GPU_GROWTH_MIN_TOTAL_BYTES):
        return []
    left = max(0, m.total_bytes - (m.last_allocated_bytes or 0))
    eta = left / g
    if eta > th.EXHAUSTION_WARNING_S:
        return []
    facts = [Fact(f"allocated GPU memory grows steadily by {gib(g * 60)}/min (R^2 {r2:.2f}); at this "
                  f"rate the {gib(m.total_bytes)} device is full in about {duration(eta)}",
                  "gpu_growth_bytes_per_s", round(g, 1)),
             Fact(f"{gib(left)} of the device is not yet allocated", "exhaustion_s", round(eta, 1))]
    fixes: list[Fix] = []
    leak = named_leak(ev.memory.leak if ev.memory is not None else None)
    if leak is not None:
        fact, fix = leak_words(leak)
        facts.append(fact)
        fixes.append(fix)
    else:
        fixes.append(Fix(text="find what is kept across steps: outputs or losses appended to a list "
                              "without .detach()/.item(), a cache that never evicts, or a graph "
                              "kept alive by a tensor that still requires grad"))
    fixes.append(_SNAPSHOT_FIX)
    severity = "critical" if eta <= th.EXHAUSTION_CRITICAL_S else "warning"
    return [Finding(v.OOM_RISK, severity, None,
                    f"GPU memory grows and fills the device in about {duration(eta)}", facts, fixes,
                    exhaustion_s=round(eta, 1))]
