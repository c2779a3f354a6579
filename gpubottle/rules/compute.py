"""compute-bound: the model's own arithmetic dominates (the healthy state; fixes are faster math)."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import CpuEvidence, Evidence, Measured, StackFrameShare
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import enough_steps, main_loader
from gpubottle.units import cores, ms, pct


def _loop_thread_works(c: CpuEvidence, w: Measured, compute_cpu: float) -> bool:
    """The loop's own thread is on a CPU, or waiting for one, most of the time it does not wait for
    data: it computes (Python, or torch ops it runs and waits on). Judged by that thread alone, so
    a single-threaded Python loop counts as much as one that fills every core, and other programs
    taking the cores (the thread then waits in the run queue) do not make a busy loop look idle."""
    if c.main_thread_cores is not None and w.total_s > w.wait_s:
        ran = (c.main_thread_cores * w.total_s - (w.wait_cpu_s or 0.0)) / (w.total_s - w.wait_s)
        return ran + (c.main_run_queue or 0.0) >= th.COMPUTE_MAIN_BUSY
    # Older evidence, without the main thread: the process against torch's threads and the cores.
    bounds = [float(x) for x in (c.torch_threads, c.cores_available, c.cores_logical) if x]
    return compute_cpu >= th.COMPUTE_MAIN_BUSY * (min(bounds) if bounds else 1.0)


def overhead(ev: Evidence) -> StackFrameShare | None:
    """The user function outside the model (forward, backward, optimizer, data) that takes the
    largest share of the main thread in the measured steps, when it is large enough to name."""
    st = ev.stacks
    if st is None or not st.main_outside_model or st.samples_main < th.LOOP_OVERHEAD_MIN_SAMPLES:
        return None
    top = st.main_outside_model[0]
    return top if top.share >= th.LOOP_OVERHEAD_SHARE else None


def loop_overhead(ev: Evidence) -> list[Finding]:
    """The loop's own code outside the model (logging, metrics, Python bookkeeping) takes a large
    share of each step: named with its function and share, never folded into compute-bound."""
    w = ev.measured()
    top = overhead(ev)
    st = ev.stacks
    if w is None or top is None or st is None or not enough_steps(ev, w):
        return []
    ph = st.main_phases
    model = sum(ph.get(k, 0.0) for k in ("forward", "backward", "optimizer"))
    n = th.LOOP_OVERHEAD_EVERY
    new_step = w.mean_step_s * (1 - top.share * (1 - 1 / n))
    facts = [Fact(
        f"of the main thread's {st.samples_main} stack samples in the measured steps, {pct(model)} are "
        f"in the model's forward, backward and optimizer step; {pct(top.share)} in {top.function} "
        f"({top.location}), which the loop calls outside them", "loop_overhead_share", top.share)]
    for other in st.main_outside_model[1:3]:
        if other.share >= th.HOT_FUNCTION_ALSO:
            facts.append(Fact(f"also outside the model: {other.function} ({other.location}) "
                              f"{pct(other.share)}"))
    fixes = [
        Fix(text=f"{top.function} takes {pct(top.share)} of each {ms(w.mean_step_s)} step: if the loop "
            f"calls it every step, call it every {n} steps (logging and metrics rarely need more)",
            where=top.location, change={"call every (steps)": [1, n]},
            expected=f"step {ms(w.mean_step_s)} -> about {ms(new_step)} "
            f"({w.mean_step_s / new_step:.1f}x)", expected_step_s=round(new_step, 6)),
        Fix(text=f"make {top.function} cheaper: tensor ops on the whole batch instead of Python loops "
            "over its values (.tolist(), per-element math), or hand it to a background thread",
            where=top.location),
    ]
    summary = (f"{top.function}, the loop's own code outside the model, takes {pct(top.share)} of "
               "each step")
    return [Finding(v.LOOP_OVERHEAD, th.severity_for_share(top.share), round(top.share, 4), summary,
                    facts, fixes)]


def compute_bound(ev: Evidence) -> list[Finding]:
    w = ev.measured()
    if w is None or not enough_steps(ev, w):
        return []
    # Without a DataLoader, batches come from the script's own code: only stack samples measure them.
    wait_known = main_loader(ev) is not None or (
        ev.stacks is not None and ev.stacks.samples_main >= th.MIN_STACK_SAMPLES)
    if ev.stacks is not None and (ev.stacks.main_loop_input_share or 0.0) >= th.INPUT_WAIT_WARNING:
        return []
    if w.wait_share >= th.INPUT_WAIT_WARNING and w.mean_wait_s >= th.INPUT_WAIT_FLOOR_S:
        return []  # input-bound: the input rules speak for this run
    share = 1.0 - w.wait_share
    c = ev.cpu
    uses_gpu = (ev.gpu is not None and ev.gpu.uses_gpu) or any(
        d.proc_mem_peak for d in ev.nvml) or ev.cuda_memory is not None
    if uses_gpu or c is None or c.main_cores is None or w.total_s <= w.wait_s:
        return []  # a GPU run: the GPU rules decide compute-bound
    # The main process's CPU while it is not waiting for input (all its threads).
    compute_cpu = (c.main_cores * w.total_s - (w.wait_cpu_s or 0.0)) / (w.total_s - w.wait_s)
    if not _loop_thread_works(c, w, compute_cpu):
        return []  # the loop neither waits for data nor computes on the CPU: not ours to claim
    facts = [
        Fact(f"the main process computes {pct(share)} of each {ms(w.mean_step_s)} step "
             f"({w.n} steps measured)", "compute_share", round(share, 4)),
        Fact(f"it keeps {cores(compute_cpu)} cores busy while computing"
             + (f", of {cores(c.cores_available)} available" if c.cores_available else ""),
             "compute_cores", round(compute_cpu, 3)),
    ]
    fixes: list[Fix] = []
    st = ev.stacks
    # "The model's own computation" is what the stacks show under forward, backward and the
    # optimizer: without enough of them (py-spy off, denied, or starved of CPU on a busy machine)
    # the loop's other code cannot be told apart, and the finding says so.
    enough = st is not None and st.samples_main >= th.LOOP_OVERHEAD_MIN_SAMPLES
    phases = (st.main_phases or {}) if st is not None else {}
    model = sum(phases.get(k, 0.0) for k in ("forward", "backward", "optimizer"))
    told = enough and model >= th.MODEL_SHARE_TOLD
    summary = (f"the model's own computation takes {pct(share)} of step time: the loop is compute-bound"
               if told else f"the main process computes {pct(share)} of step time: the loop is "
               "compute-bound")
    over = overhead(ev)
    if over is not None:  # the loop's own code: a finding of its own (loop-overhead) says what
        summary = (f"the main process computes {pct(share)} of step time, {pct(over.share)} of it in "
                   f"{over.function}, outside the model (loop-overhead)")
    avail = c.cores_available
    if c.torch_threads and avail and avail >= 1 and c.torch_threads >= th.THREADS_OVER_CORES * avail:
        # More math threads than cores: they wait for each other at every parallel op. The first
        # fix for a loop whose time is the math (cpu-contention says where the setting comes from).
        fixes.insert(0, Fix(
            text=f"torch computes with {c.torch_threads} threads on {cores(avail)} cores: use as many "
            f"threads as cores, torch.set_num_threads({max(1, int(avail))})",
            where=c.threads_site,
            change={"torch.set_num_threads": [c.torch_threads, max(1, int(avail))]}))
    margin = th.THREADS_UNDER_CORES_MARGIN
    if over is not None:  # faster math would not make this loop faster: its own code sets the pace
        return [Finding(v.COMPUTE_BOUND, "info", round(share, 4), summary, facts, fixes)]
    if (c.torch_threads and avail and c.torch_threads < avail - margin
            and compute_cpu < c.torch_threads + margin):
        fixes.append(Fix(
            text=f"torch computes on {c.torch_threads} thread(s) with {cores(avail)} cores available",
            change={"torch.set_num_threads": [c.torch_threads, int(avail)]},
        ))
    fixes.append(Fix(
        text="run the math faster: torch.compile(model), bfloat16 autocast "
        "(torch.autocast('cpu', dtype=torch.bfloat16) on CPU, 'cuda' on GPU), or a GPU",
    ))
    open_q = None
    if not wait_known:
        open_q = ("no DataLoader: time the script spends making batches itself is counted as compute "
                  "here; stack samples (py-spy) tell them apart")
    elif not told and over is None:
        if enough and st is not None:
            open_q = (f"{pct(model)} of the main thread's {st.samples_main} stack samples are in the "
                      "model's forward, backward and optimizer step; the rest is the loop's own code, "
                      "which the samples did not pin to one function")
        else:
            got = f"{st.samples_main} of the main thread's" if st is not None else "no"
            open_q = (f"{got} stack samples: too few to tell the model's forward, backward and "
                      "optimizer from the loop's own code (logging, metrics, saving); a longer run, or "
                      "a quieter machine for py-spy, would")
    return [Finding(v.COMPUTE_BOUND, "info", round(share, 4), summary, facts, fixes, open_q)]
