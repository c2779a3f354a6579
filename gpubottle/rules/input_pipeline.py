"""The loop waits for batches: data-starved or preprocessing-bound, and why.

Three causes, told apart by measurement:
- workers starting again every epoch (a rebuilt loader, or workers that do not persist): the
  first batch of each epoch waits for them;
- loading that more parallelism would hide: a loader that mostly waits (I/O, a remote store), or
  one that computes while the run leaves CPU unused; the worker plan predicts the gain;
- per-sample work the CPU the run has cannot keep up with: it must get cheaper.

The loader is judged by its own thread (on a CPU, waiting for one, or blocked), and the CPU by what
the run itself uses: other programs' load is a finding of its own (cpu-contention), never a
different verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, LoaderInfo, Measured
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import enough_steps, main_loader
from gpubottle.rules.gpu import breakdown_fact
from gpubottle.rules.input_fixes import (
    batches_per_step,
    cheaper_fixes,
    hot_fix,
    io_fix,
    prefetch_fix,
    receive_fix,
    receive_s,
    receiving_s,
    restart_fix,
    worker_fix,
)
from gpubottle.rules.loop_input import cpu_bound_step, generator_loop
from gpubottle.rules.worker_plan import plan_workers
from gpubottle.units import cores, ms, pct


@dataclass
class LoaderState:
    """Whoever makes the batches, while the loop waits: share of time on a CPU, runnable but
    waiting for one, and (the rest) blocked on I/O, a queue or sleep."""

    who: str
    busy: float | None
    run_queue: float | None

    @property
    def blocked(self) -> float | None:
        if self.busy is None:
            return None
        return max(0.0, 1.0 - self.busy - (self.run_queue or 0.0))


def loader_state(ev: Evidence, w: Measured, lo: LoaderInfo, wait_s: float) -> LoaderState:
    c = ev.cpu
    if not lo.num_workers:
        busy = (w.wait_cpu_s / w.n / wait_s) if (w.wait_cpu_s is not None and wait_s > 0) else None
        return LoaderState("main process", min(1.0, busy) if busy is not None else None,
                           c.main_run_queue if c else None)
    if c is None or c.per_worker_cores is None:
        return LoaderState("workers", None, None)
    return LoaderState("workers", min(1.0, c.per_worker_cores), c.per_worker_run_queue)


def _loop(ev: Evidence) -> str:
    """An inference loop (no backward, no optimizer) is not called a training loop."""
    return "the training loop" if ev.steps.source in ("optimizer", "backward", "profiler") else "the loop"


def _loader_text(lo: LoaderInfo) -> str:
    where = f"DataLoader at {lo.site}" if lo.site else "DataLoader"
    known = [f"num_workers={lo.num_workers}" if lo.num_workers is not None else
             "num_workers>0 (multi-process)"]
    if lo.batch_size is not None:
        known.append(f"batch_size={lo.batch_size}")
    if lo.dataset_class:
        known.append(f"dataset {lo.dataset_class}")
    if lo.builds > 1:
        known.append(f"built {lo.builds} times")
    return f"{where}: " + ", ".join(known)


def _saturated(ev: Evidence) -> bool:
    """Every core busy (by anyone): a loader that looks idle may then be starved of CPU rather than
    blocked, which only the run queue tells apart."""
    c = ev.cpu
    if c is None or not c.cores_available:
        return False
    if c.system_cores is not None and c.cores_logical:
        return c.cores_logical - c.system_cores < th.SPARE_CORES_MIN
    return (c.tree_cores or 0.0) + (c.outside_cores or 0.0) >= c.cores_available - th.SPARE_CORES_MIN


def _start_up_s(ev: Evidence) -> float:
    """Mean seconds per measured step spent waiting for workers to start again."""
    st = ev.steps
    idx = st.measured_indices()
    if not st.start_up_wait_s or not idx:
        return 0.0
    return sum(st.start_up_wait_s[i] for i in idx) / len(idx)


def input_pipeline(ev: Evidence) -> list[Finding]:
    w = ev.measured()
    lo = main_loader(ev)
    if w is None or not enough_steps(ev, w):
        return []
    if lo is None:
        return generator_loop(ev, w)
    share = w.wait_share
    if share < th.INPUT_WAIT_INFO or w.mean_wait_s < th.INPUT_WAIT_FLOOR_S:
        return []
    start_up = min(_start_up_s(ev), w.mean_wait_s)
    steady = w.mean_wait_s - start_up  # waiting for batches once the workers run
    facts = [
        Fact(f"the loop waits {ms(w.mean_wait_s)} for its batch in a {ms(w.mean_step_s)} step "
             f"({pct(share)} of step time, {w.n} steps measured)", "input_wait_share", round(share, 4)),
        Fact(_loader_text(lo)),
    ]
    if ev.gpu is not None and ev.gpu.breakdown:
        facts.append(breakdown_fact(ev.gpu))
    restart = None
    if start_up >= th.INPUT_WAIT_FLOOR_S and start_up / w.mean_step_s >= th.INPUT_WAIT_INFO:
        epochs = max(1, lo.iterators - 1)
        facts.append(Fact(
            f"{pct(start_up / w.mean_step_s)} of step time is waiting for the workers to stop at the end "
            f"of each epoch and start again for the next ({epochs} restarts"
            + (f"; the DataLoader is built {lo.builds} times" if lo.builds > 1 else "")
            + (", spawn" if lo.start_method == "spawn" else "") + ")",
            "worker_start_share", round(start_up / w.mean_step_s, 4)))
        restart = restart_fix(lo, w, start_up, epochs)
    if steady >= th.INPUT_WAIT_FLOOR_S and steady / w.mean_step_s >= th.INPUT_WAIT_INFO:
        finding = _steady(ev, w, lo, steady, start_up, share, facts, restart)
        if restart is None or start_up < steady:
            return [finding]
        # Most of the wait is workers starting: that is the verdict, the steady wait comes after.
        finding.category = v.DATA_STARVED
        finding.summary = _restart_summary(ev, share, start_up / w.mean_step_s)
        finding.open_question = None
        return [finding]
    fixes = [restart] if restart is not None else []
    return [Finding(v.DATA_STARVED, th.severity_for_share(share), round(share, 4),
                    _restart_summary(ev, share, start_up / w.mean_step_s), facts, fixes)]


def _restart_summary(ev: Evidence, share: float, start_share: float) -> str:
    return (f"{_loop(ev)} waits for data {pct(share)} of the time, {pct(start_share)} of it for "
            "DataLoader workers starting again at every epoch")


def _steady(ev: Evidence, w: Measured, lo: LoaderInfo, wait_s: float, start_up: float, share: float,
            facts: list[Fact], restart: Fix | None) -> Finding:
    """The wait for batches while the workers (or the main process) make them."""
    nw = lo.num_workers or 0
    c = ev.cpu
    state = loader_state(ev, w, lo, wait_s)
    if state.busy is not None:
        facts.append(Fact(
            f"while the loop waits, the {state.who} are busy {pct(state.busy)} of a core each" if nw else
            f"while the loop waits, the main process is busy {pct(state.busy)} of a core loading the "
            "batch itself", "loader_busy", round(state.busy, 3)))
    if state.run_queue is not None and state.run_queue >= th.RUN_QUEUE_MENTION:
        facts.append(Fact(f"the {'workers' if nw else 'main thread'} waited for a free core "
                          f"{pct(state.run_queue)} of the time (run queue)",
                          "worker_run_queue" if nw else "main_run_queue", round(state.run_queue, 3)))
    if c is not None and c.tree_cores is not None and c.cores_available:
        facts.append(Fact(f"the run uses {cores(c.tree_cores)} of the {cores(c.cores_available)} cores it "
                          "may use, on average", "run_cores", round(c.tree_cores, 3)))
    recv = receiving_s(w, lo, wait_s)
    if recv is not None:
        facts.append(Fact(f"the main process itself is busy {pct(recv / wait_s)} of that wait taking "
                          "batches from the workers", "main_receive_share", round(recv / wait_s, 3)))
    blocked = state.blocked
    saturated = _saturated(ev)
    io_bound = (blocked is not None and blocked >= th.LOADER_BLOCKED_IO and recv is None
                and (state.run_queue is not None or not saturated))
    known_cpu = c is not None and c.cores_available is not None and c.tree_cores is not None
    plan = None
    if lo.num_workers is not None:
        per_step = batches_per_step(ev, lo)
        t_batch = (wait_s / per_step) if nw == 0 else nw * (w.mean_step_s - start_up) / per_step
        compute = max(1e-9, w.mean_step_s - w.mean_wait_s) + (receive_s(w, lo) or 0.0)
        # Loading that waits on I/O needs no core per worker: other programs' load is
        # cpu-contention's to say, and the plan is made as if the run were alone.
        plan = plan_workers(nw, compute, per_step * t_batch, cpu_bound_step(ev, w, alone=io_bound),
                            not io_bound, c.cores_available if c else None)
    speedup = (w.mean_step_s - start_up) / plan.step_s if plan is not None else 1.0
    starved_of_cpu = not io_bound and (state.run_queue or 0.0) >= th.LOADER_CPU_STARVED
    open_q = None
    # Waiting on I/O is starvation only while more workers would still gain: at the run's own CPU
    # limit (measured: 8, 10 and 16 workers on 2 cores took the same time) the work itself must
    # shrink.
    io_helps = io_bound and (plan is None or plan.workers <= nw or speedup >= 1 + th.MIN_FIX_GAIN)
    if io_helps or (plan is not None and known_cpu and not starved_of_cpu
                    and speedup >= th.MIN_WORKER_SPEEDUP):
        category = v.DATA_STARVED
    elif known_cpu or state.busy is not None:
        category = v.PREPROCESSING_BOUND
    else:  # a trace: no CPU measurements, so the two stay open
        avail = c.cores_available if c else None
        category = v.DATA_STARVED if nw + 1 < (avail or 2) else v.PREPROCESSING_BOUND
        other = v.PREPROCESSING_BOUND if category == v.DATA_STARVED else v.DATA_STARVED
        open_q = (f"the CPU use of the loader was not measured (a trace does not record it), so "
                  f"{other} is not ruled out: if the CPU is already saturated, more workers will not "
                  "help; `gpubottle run` measures it")
    fixes: list[Fix] = []
    first_restart = restart is not None and start_up >= wait_s
    if first_restart and restart is not None:
        fixes.append(restart)
    if category == v.DATA_STARVED:
        if lo.num_workers is None:  # a trace shows a multi-process loader, not its worker count
            fixes.append(Fix(text="the loop waits on a multi-process DataLoader: raise num_workers (the "
                                  "trace does not record how many it has), or prefetch_factor"))
        elif plan is not None and plan.workers > nw and speedup >= 1 + th.MIN_FIX_GAIN:
            fixes.append(worker_fix(ev, w, lo, plan, io_bound, start_up, share))
        elif io_bound and (pf := prefetch_fix(lo)) is not None:
            fixes.append(pf)
    fixes += [f for f in (receive_fix(ev, w, lo, wait_s, saturated), hot_fix(ev, lo)) if f is not None]
    if category == v.DATA_STARVED and io_bound:
        fixes.append(io_fix(lo))
    if category == v.PREPROCESSING_BOUND:
        more, fact = cheaper_fixes(ev, w, lo, wait_s)
        if fact is not None:
            facts.append(Fact(fact))
        fixes += more
        if plan is not None and plan.workers > nw and not starved_of_cpu and (
                speedup >= th.TRY_WORKER_SPEEDUP):
            fixes.append(Fix(
                text=f"with the CPU near its limit, num_workers={plan.workers} may still gain a little "
                f"(the model says up to {speedup:.2f}x, within its error here): try it and compare",
                where=lo.site, change={"num_workers": [nw, plan.workers]}))
    if restart is not None and not first_restart:
        fixes.append(restart)
    if category == v.DATA_STARVED:
        summary = (f"{_loop(ev)} waits for data {pct(share)} of the time"
                   + ("" if open_q else (", and the loader mostly waits on I/O" if io_bound else
                                         ", and more loading in parallel would hide it"))
                   + (f" ({pct(blocked or 0)} blocked)" if io_bound else "")
                   + ("; batches are made in the training process itself (num_workers=0)"
                      if lo.num_workers == 0 and open_q is not None else ""))
    else:
        summary = (f"{_loop(ev)} waits for data {pct(share)} of the time and the input pipeline "
                   "already uses the CPU the run has: the per-sample work must get cheaper")
    return Finding(category, th.severity_for_share(share), round(share, 4), summary, facts, fixes, open_q)
