"""Small helpers the rules share: how many measured steps a verdict needs, and the run's main loader.

The measured steps' totals are Evidence.measured() (one definition, gpubottle/evidence); numbers are
written with gpubottle/units.py.
"""

from __future__ import annotations

from gpubottle.clock import MIN_MEASURED, MIN_TRACE_STEPS, host_ahead
from gpubottle.evidence import Evidence, LoaderInfo, Measured
from gpubottle.rules import thresholds as th


def min_steps(ev: Evidence) -> int:
    """A profiler trace records every event of the steps it holds, so one complete step is already
    a measurement; sampled runs need several."""
    return MIN_TRACE_STEPS if ev.run.kind == "trace" else MIN_MEASURED


def enough_steps(ev: Evidence, w: Measured | None) -> bool:
    return w is not None and w.n >= min_steps(ev)


def gpu_sets_pace(ev: Evidence) -> float | None:
    """On the device's own clock the host runs ahead of the GPU: the GPU, not the host's code, sets
    the step's pace. The host's median lead (seconds), else None: the same definition as the run's
    account (clock.host_ahead), over the measured steps."""
    st = ev.steps
    return host_ahead(st.device_s, st.device_lag_s, st.device_input_idle_s, st.durations_s, st.input_wait_s,
                      st.measured_indices())


def main_loader(ev: Evidence) -> LoaderInfo | None:
    """The training loader the loop waits on most (its fetches' time), else the one it drew most
    batches from: of two zipped loaders, a fast one and a slow one, the slow one is the input."""
    loaders = [lo for lo in ev.loaders if lo.batches > 0]
    return max(loaders, key=lambda lo: (lo.fetch_s, lo.batches)) if loaders else None


def workers_compute(ev: Evidence, lo: LoaderInfo) -> bool:
    """The loader's workers keep the cores the run may use busy (their CPU shows it): only then can
    fewer of them do as well. Workers that mostly wait (reads, a queue, sleep) overlap their waits;
    fewer of them wait in turn (8 workers 6 s, 2 workers 9 s, none 12.5 s on a 2-core run)."""
    c = ev.cpu
    if c is None or not lo.num_workers or not c.cores_available:
        return False
    busy = c.workers_cores if c.workers_cores is not None else (c.per_worker_cores or 0.0) * lo.num_workers
    return busy >= c.cores_available - th.SPARE_CORES_MIN


def background_wait(ev: Evidence, w: Measured) -> float | None:
    """The loop's share of its steps off the CPU where its main loader is fetched on another thread
    (a background prefetcher feeding it through a queue), and that thread's fetches take a large
    share of a step: then the loader's waits are not the loop's, and the time its own thread spends
    neither running nor queued for a core is its wait for that thread. None otherwise."""
    lo = main_loader(ev)
    c = ev.cpu
    if lo is None or lo.off_loop_fetch_s is None or c is None or c.main_thread_cores is None:
        return None
    if lo.off_loop_fetch_s < th.BACKGROUND_FETCH_SHARE * w.mean_step_s:
        return None
    busy = c.main_thread_cores + (c.main_run_queue or 0.0)
    return max(0.0, min(1.0, 1.0 - busy))
