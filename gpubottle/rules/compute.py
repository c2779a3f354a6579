"""compute-bound: the model's own arithmetic dominates (the healthy state; fixes are faster math)."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import CpuEvidence, Evidence, Measured
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
    summary = f"the model's own computation takes {pct(share)} of step time: the loop is compute-bound"
    st = ev.stacks
    top = st.main_outside_model[0] if st is not None and st.main_outside_model else None
    if (st is not None and top is not None and st.samples_main >= th.LOOP_OVERHEAD_MIN_SAMPLES
            and top.share >= th.LOOP_OVERHEAD_SHARE):
        ph = st.main_phases
        model = sum(ph.get(k, 0.0) for k in ("forward", "backward", "optimizer"))
        facts.append(Fact(
            f"of the main thread's {st.samples_main} stack samples, {pct(model)} are in the model's "
            f"forward, backward and optimizer step; {pct(top.share)} in {top.function} "
            f"({top.location}), which the loop calls outside them", "loop_overhead_share", top.share))
        fixes.append(Fix(
            text=f"{top.function} takes {pct(top.share)} of the main thread, outside the model: if it "
            "is bookkeeping (metrics, logging, Python loops over a batch), run it every N steps, "
            "vectorise it with tensor ops, or move it off the training loop",
            where=top.location,
        ))
        summary = (f"the main process is busy the whole step, but {pct(top.share)} of it is "
                   f"{top.function}, outside the model: the loop's own code sets the pace")
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
    return [Finding(v.COMPUTE_BOUND, "info", round(share, 4), summary, facts, fixes, open_q)]
