"""oom-risk on the GPU, said: a CUDA OOM, a peak near the device's capacity (from the allocator or a
trace) and allocated memory that climbs."""

from __future__ import annotations

from gpubottle.evidence import MemoryContents
from gpubottle.report import Fact, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.gpu.memory_decide import BatchChange, GpuGrowth, GpuMemory, Held, TraceMemory
from gpubottle.rules.memory.words import graph_fact, graph_fix, leak_words
from gpubottle.units import duration, gib, pct


# Fixes without inputs are functions, not shared constants: each finding gets its own Fix.
def fragmentation_fix() -> Fix:
    return Fix(text="reduce fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")


def snapshot_fix() -> Fix:
    return Fix(text="to see every allocation and its Python stack, rerun with "
                    "`gpubottle run --memory-snapshot` and open the .pickle at "
                    "pytorch.org/memory_viz")


def contents_fact(c: MemoryContents, allocated: int) -> Fact | None:
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


def held_words(h: Held, allocated: int) -> tuple[Fact, Fix]:
    share = pct(h.bytes / allocated)
    if h.count > 1:
        return (Fact(f"{h.count} tensors of {h.label} referenced from Python hold {gib(h.bytes)} "
                     f"({share} of the allocated memory)", "held_from_python", h.bytes),
                Fix(text=f"something keeps {h.count} tensors of {h.label} alive (a list that grows every "
                         "step: outputs, losses or histories kept without .detach() or .item()): keep "
                         "only what is needed, detached, or move it to the CPU"))
    return (Fact(f"one tensor of {h.label} referenced from Python holds {gib(h.bytes)} "
                 f"({share} of the allocated memory)", "held_from_python", h.bytes),
            Fix(text=f"the {h.label} tensor is {gib(h.bytes)}: free it (del, or keep it on the CPU) "
                     "before training, or make it smaller"))


def fragmentation_fact(slack: int) -> Fact:
    return Fact(f"{gib(slack)} reserved by the allocator but not in tensors: fragmentation",
                "fragmentation_bytes", slack)


def batch_fix(b: BatchChange) -> Fix:
    change = {"batch_size": [b.old, b.new]}
    if b.activations_bytes is not None:
        why = (f"activations need {gib(b.activations_bytes)} at batch {b.old}; "
               f"{gib(b.budget_bytes or 0)} is left beside the model state")
        return Fix(text=f"lower the batch to {b.new} and accumulate gradients over {b.steps} steps to "
                        f"keep the effective batch ({why})", where=b.site, change=change)
    return Fix(text="halve the batch and accumulate gradients over two steps to keep the effective batch",
                    where=b.site, change=change)


def facts(d: GpuMemory) -> list[Fact]:
    out: list[Fact] = []
    if d.died:
        out.append(Fact(f"the run died: {d.message}"))
        if d.moment_known:
            out.append(Fact(
                f"at that moment tensors held {gib(d.allocated_bytes)}, the allocator reserved "
                f"{gib(d.reserved_bytes or 0)} of {gib(d.total_bytes)}"
                + (f", {gib(d.free_bytes)} free" if d.free_bytes is not None else "")))
    else:
        out.append(Fact(f"the CUDA allocator reserved up to {gib(d.reserved_bytes or 0)} of "
                        f"{gib(d.total_bytes)} ({pct(d.used or 0.0)}); tensors peaked at "
                        f"{gib(d.allocated_bytes)}", "gpu_memory_fraction", round(d.used or 0.0, 4)))
    if d.contents is not None:
        fact = contents_fact(d.contents, d.allocated_bytes)
        out += [fact] if fact else []
    if d.held is not None:
        out.append(held_words(d.held, d.allocated_bytes)[0])
    if d.fragmentation_bytes is not None:
        out.append(fragmentation_fact(d.fragmentation_bytes))
    out += [Fact(f"other processes held up to {gib(b)} on {label}") for label, b in d.others]
    return out


def fixes(d: GpuMemory) -> list[Fix]:
    held = [held_words(d.held, d.allocated_bytes)[1]] if d.held is not None else []
    batch = [batch_fix(d.batch)] if d.batch is not None else []
    activations = [Fix(text="lower activation memory: bfloat16 autocast, activation checkpointing "
                            "(torch.utils.checkpoint) on the largest blocks")]
    state: list[Fix] = []
    c = d.contents
    if c is not None and d.state_share >= th.MODEL_STATE_NOTE:
        state.append(Fix(
            text=f"the model state alone takes {gib(c.model_state_bytes)} ({pct(d.state_share)}); "
                 "it does not shrink with the batch: shard it across GPUs (FSDP, ZeRO), keep "
                 "weights in bfloat16, or use an optimizer with less state (8-bit Adam, "
                 "Adafactor; SGD with momentum keeps half of Adam's)"))
    ordered = state + batch + activations if d.state_first else batch + activations + state
    out = held + ordered + ([fragmentation_fix()] if d.fragmentation_bytes is not None else [])
    return out + ([snapshot_fix()] if d.suggest_snapshot else [])


def summary(d: GpuMemory) -> str:
    return ("the run died of CUDA out-of-memory" if d.died
            else f"GPU memory reached {pct(d.used or 0.0)} of the device")


def trace_facts(d: TraceMemory) -> list[Fact]:
    out = [Fact(f"GPU memory peaked at {gib(d.peak_bytes)} reserved of {gib(d.total_bytes)} "
                f"({pct(d.used)})", "gpu_memory_fraction", round(d.used, 4))]
    if d.fragmentation_bytes is not None:
        out.append(fragmentation_fact(d.fragmentation_bytes))
    return out


def trace_fixes(d: TraceMemory) -> list[Fix]:
    out = [Fix(text="lower peak memory: smaller batch with gradient accumulation, activation "
                    "checkpointing, bfloat16 autocast")]
    return out + ([fragmentation_fix()] if d.fragmentation_bytes is not None else [])


def trace_summary(d: TraceMemory) -> str:
    return f"GPU memory reached {pct(d.used)} of the device"


def growth_facts(d: GpuGrowth) -> list[Fact]:
    out = [Fact(f"allocated GPU memory grows steadily by {gib(d.bytes_per_s * 60)}/min (R^2 {d.r2:.2f}); "
                f"at this rate the {gib(d.total_bytes)} device is full in about {duration(d.exhaustion_s)}",
                "gpu_growth_bytes_per_s", round(d.bytes_per_s, 1)),
           Fact(f"{gib(d.left_bytes)} of the device is not yet allocated", "exhaustion_s",
                round(d.exhaustion_s, 1))]
    if d.leak is not None:
        out.append(leak_words(d.leak)[0])
    if d.graph is not None:
        out.append(graph_fact(d.graph))
    return out


def growth_fixes(d: GpuGrowth) -> list[Fix]:
    if d.leak is not None:
        first = leak_words(d.leak)[1]
    elif d.graph is not None:
        first = graph_fix(d.graph)
    else:
        first = Fix(text="find what is kept across steps: outputs or losses appended to a list "
                         "without .detach()/.item(), a cache that never evicts, or a graph "
                         "kept alive by a tensor that still requires grad")
    return [first, snapshot_fix()]


def growth_summary(d: GpuGrowth) -> str:
    return f"GPU memory grows and fills the device in about {duration(d.exhaustion_s)}"
