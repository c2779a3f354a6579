"""Small helpers the rules share: how many measured steps a verdict needs, and the run's main loader.

The measured steps' totals are Evidence.measured() (one definition, gpubottle/evidence); numbers are
written with gpubottle/units.py.
"""

from __future__ import annotations

from gpubottle.clock import MIN_MEASURED, MIN_TRACE_STEPS, host_ahead
from gpubottle.evidence import Evidence, LoaderInfo, Measured


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
    loaders = [lo for lo in ev.loaders if lo.batches > 0]
    return max(loaders, key=lambda lo: lo.batches) if loaders else None
