"""Small helpers the rules share: how many measured steps a verdict needs, the run's main loader,
and a loader whose every copy (rank or worker) iterates the whole dataset.

The measured steps' totals are Evidence.measured() (one definition, gpubottle/evidence); numbers are
written with gpubottle/units.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from gpubottle.clock import MIN_MEASURED, MIN_TRACE_STEPS, host_ahead
from gpubottle.evidence import Evidence, LoaderInfo, Measured, Scripted
from gpubottle.evidence.account import AccountEntry
from gpubottle.rules import thresholds as th


def entry(ev: Evidence, phase: str) -> AccountEntry | None:
    """The run's account entry for `phase` (the first, where a phase has one per loader)."""
    return next((a for a in ev.account if a.phase == phase), None)


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


def untimed_model_share(ev: Evidence) -> float | None:
    """No training step timed the run and most of its main thread's samples are in a model's
    forward or backward (an inference or generation script): that share, else None. Its time is the
    model's computation (rules/compute/untimed.py), not start-up. Not where an exception ended the
    run: a training script that failed in its first forward has no step either."""
    st = ev.stacks
    if (ev.steps.durations_s or ev.run.exception or st is None
            or st.samples_main < th.UNTIMED_MIN_SAMPLES):
        return None
    share = st.main_phases.get("forward", 0.0) + st.main_phases.get("backward", 0.0)
    return share if share >= th.UNTIMED_MODEL_SHARE else None


def main_loader(ev: Evidence) -> LoaderInfo | None:
    """The training loader the loop waits on most (its fetches' time), else the one it drew most
    batches from: of two zipped loaders, a fast one and a slow one, the slow one is the input."""
    loaders = [lo for lo in ev.loaders if lo.batches > 0]
    return max(loaders, key=lambda lo: (lo.fetch_s, lo.batches)) if loaders else None


def batches_per_step(ev: Evidence, lo: LoaderInfo) -> float:
    return max(1.0, lo.batches / max(1, ev.steps.hooked_count()))  # (batches recorded: hooked steps')


def _whole_batches(ev: Evidence, lo: LoaderInfo) -> int:
    k = batches_per_step(ev, lo)
    return round(k) if round(k) >= 2 and abs(k - round(k)) <= th.ACCUMULATED_SLACK else 1


def gathered_batches(ev: Evidence, lo: LoaderInfo) -> int:
    """The loader's batches each step takes where it is two or more and the step runs backward once:
    the loop gathers them into one step's batch itself (`xs.append(x)`, then `torch.cat(xs)` every
    64 batches of batch_size=1), not accumulating gradients over them; else 1."""
    k = _whole_batches(ev, lo)
    backwards = ev.steps.backward_calls / max(1, ev.steps.hooked_count())
    return k if k >= 2 and ev.steps.backward_calls and backwards < th.GATHERED_BACKWARDS_MAX else 1


def batches_a_step(ev: Evidence, lo: LoaderInfo) -> int:
    """The whole number of the loader's batches each optimizer step takes where it is two or more
    and gradients are accumulated over them (a backward each, as a rule), else 1."""
    return 1 if gathered_batches(ev, lo) > 1 else _whole_batches(ev, lo)


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


@dataclass
class Repeated:
    """The training loader iterated whole by each of `copies` ranks (no DistributedSampler) or
    workers (an IterableDataset that does not split its stream): unsharded-data, both forms."""

    loader: LoaderInfo
    copies: int
    epoch_batches: int | None  # batches an epoch takes now (when one ran to its end)
    train_s: float | None  # the run's training time (the account's), when known
    whole_epochs: bool  # the run ended by finishing its epochs: its time scales with the epoch

    @property
    def wasted(self) -> float:
        """The share of the input work that repeats another copy's."""
        return 1 - 1 / self.copies

    def run_share(self, run_s: float | None) -> float | None:
        return round(self.wasted * (self.train_s / run_s), 4) if self.train_s and run_s else None

    def severity(self, run_s: float | None) -> str:
        share = self.run_share(run_s)
        return th.severity_for_run_share(share) if share is not None else "warning"

    def shorter_run(self, run_s: float | None) -> float | None:
        """The run once each copy takes its share: only where it ended by finishing its epochs (a
        run of fixed steps takes as long, over data each copy sees once)."""
        return run_s - self.train_s * self.wasted if self.whole_epochs and self.train_s and run_s else None


R = TypeVar("R", bound=Repeated)


def repeated(ev: Evidence, lo: LoaderInfo, copies: int, kind: type[R]) -> R:
    """`kind` (Repeated's ranks' or workers' form) of the run's `lo`, iterated by `copies`."""
    train = next((e.seconds for e in ev.account if e.phase == "train"), None)
    whole = bool(lo.epoch_batches) and ev.run.stop_reason == "completed"
    return kind(lo, copies, lo.epoch_batches[-1] if lo.epoch_batches else None, train, whole)


def run_expected(run_s: float | None, new_run: float | None) -> str | None:
    """A fix's promise for the whole run, in the report's words."""
    if not new_run or not run_s:
        return None
    return f"run {run_s:.1f} s -> about {new_run:.1f} s ({run_s / new_run:.1f}x)"


def uses_gpu(ev: Evidence) -> bool:
    """The run computed on a GPU (its kernels, its memory, NVML's per-process memory): the GPU rules
    speak for its math, not the CPU's."""
    return (ev.gpu is not None and ev.gpu.uses_gpu) or ev.cuda_memory is not None or any(
        d.proc_mem_peak for d in ev.nvml)


def model_names(ev: Evidence) -> list[str] | None:
    """The script's names for the modules its counted step called (for torch.compile(net)): not a
    module's call of itself from its own method (`self(x)` in a Lightning-style training_step, once
    told `self = torch.compile(self)`)."""
    if ev.model_calls is None or ev.model_calls.called is None:
        return None
    return [n for n in ev.model_calls.called if n != "self"] or None


def scripted(ev: Evidence) -> Scripted | None:
    """The module the counted step called is TorchScript (torch.compile refuses it)."""
    return ev.model_calls.scripted if ev.model_calls is not None else None


def most_of(share: float | None) -> str:
    """How much of a function's samples its kind of work holds, said: "most" only where clearly
    most (a collate's torch.tensor(list) at 49% of its samples once read "most of it"), else the
    share itself. None: not measured, said as before."""
    return "most" if share is None or share >= th.MOST_SHARE else f"{share:.0%}"
