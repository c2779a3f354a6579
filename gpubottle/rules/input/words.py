"""data-starved's and preprocessing-bound's facts and summaries."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.analysis.work_kinds import remedy
from gpubottle.evidence import Evidence, LoaderInfo, Measured
from gpubottle.report import Fact
from gpubottle.rules.common import batches_per_step, gathered_batches
from gpubottle.rules.input.decide import Steady
from gpubottle.units import cores, ms, n_cores, pct, seconds


def loop_name(ev: Evidence) -> str:
    """An inference loop (no backward, no optimizer) is not called a training loop; where the
    device's clock measured the wait, it is the GPU that waits."""
    m = ev.measured()
    if m is not None and m.device_wait_s is not None:
        return "the GPU"
    return "the training loop" if ev.steps.training_clock else "the loop"


def loader_fact(lo: LoaderInfo) -> Fact:
    where = f"DataLoader at {lo.site}" if lo.site else "DataLoader"
    known = [f"num_workers={lo.num_workers}" if lo.num_workers is not None else
             "num_workers>0 (multi-process)"]
    if lo.batch_size is not None:
        known.append(f"batch_size={lo.batch_size}")
    if lo.dataset_class:
        known.append(f"dataset {lo.dataset_class}")
    if lo.builds > 1:
        known.append(f"built {lo.builds} times")
    return Fact(f"{where}: " + ", ".join(known))


def wait_fact(w: Measured, batches: int = 1, gathered: int = 1) -> Fact:
    """`batches`: the loader's batches a step takes (gradients accumulated over them); `gathered`:
    those the loop gathers into one step's batch itself."""
    share = w.wait_share
    if w.device_wait_s is not None:
        idle = w.device_wait_s / w.n
        return Fact(f"the GPU sits idle waiting for the next batch {ms(idle)} of each {ms(w.mean_step_s)} "
                    f"step on its own clock ({pct(share)} of step time, {w.n} steps measured)"
                    + (f"; the loop waits {ms(w.mean_wait_s)} for each batch while the GPU still works "
                       "through the steps queued before" if w.mean_wait_s > 1.25 * idle else ""),
                    "input_wait_share", round(share, 4))
    its = ("its batch" if batches < 2 and gathered < 2 else
           f"the {gathered} batches it gathers into each step's batch" if gathered >= 2 else
           f"its {batches} batches (gradients accumulated over them)")
    return Fact(f"the loop waits {ms(w.mean_wait_s)} for {its} in a {ms(w.mean_step_s)} step "
                f"({pct(share)} of step time, {w.n} steps measured)", "input_wait_share", round(share, 4))


def restart_fact(lo: LoaderInfo, start_share: float, epochs: int) -> Fact:
    return Fact(
        f"{pct(start_share)} of step time is waiting for the workers to stop at the end "
        f"of each epoch and start again for the next ({epochs} restarts"
        + (f"; the DataLoader is built {lo.builds} times" if lo.builds > 1 else "")
        + (", spawn" if lo.start_method == "spawn" else "") + ")"
        + (f"; each worker runs its worker_init_fn, {lo.worker_init}, every time it starts"
           if lo.worker_init else ""),
        "worker_start_share", round(start_share, 4))


def restart_summary(ev: Evidence, share: float, start_share: float) -> str:
    return (f"{loop_name(ev)} waits for data {pct(share)} of the time, {pct(start_share)} of it for "
            "DataLoader workers starting again at every epoch")


def steady_facts(ev: Evidence, d: Steady, workers: int) -> list[Fact]:
    """What the loader and the CPU did while the loop waited."""
    facts: list[Fact] = []
    st = d.state
    if st.busy is not None:
        facts.append(Fact(
            f"while the loop waits, the {st.who} are busy {pct(st.busy)} of a core each" if workers else
            f"while the loop waits, the main process is busy {pct(st.busy)} of a core loading the "
            "batch itself", "loader_busy", round(st.busy, 3)))
    if d.mention_run_queue and st.run_queue is not None:
        facts.append(Fact(f"the {'workers' if workers else 'main thread'} waited for a free core "
                          f"{pct(st.run_queue)} of the time (run queue)",
                          "worker_run_queue" if workers else "main_run_queue", round(st.run_queue, 3)))
    c = ev.cpu
    if d.consumer_starved and d.consumer_run_queue is not None:
        facts.append(Fact(f"the main process, which takes the workers' batches, waited for a free core "
                          f"{pct(d.consumer_run_queue)} of "
                          + ("its wait for them" if d.consumer_in_wait else "the time")
                          + ": its wait is for CPU, not for the workers' reads",
                          "main_run_queue_in_wait" if d.consumer_in_wait else "main_run_queue",
                          round(d.consumer_run_queue, 3)))
    if d.sampler is not None:
        facts.append(Fact(f"the main thread's time in the DataLoader is {pct(d.sampler.share)} in the "
                          f"sampler's code ({d.sampler.function}), asking it for the next indices",
                          "sampler_share", d.sampler.share))
    if d.workers_idle is not None:
        facts.append(Fact(f"the workers' stacks wait for work on their queue {pct(d.workers_idle)} of the "
                          "time: the batches are made, taking them is the slow part, not reads",
                          "workers_wait_for_work", round(d.workers_idle, 3)))
    if c is not None and c.tree_cores is not None and c.cores_available:
        facts.append(Fact(f"the run uses {cores(c.tree_cores)} of the {n_cores(c.cores_available)} it "
                          "may use, on average", "run_cores", round(c.tree_cores, 3)))
    if d.receive_s is not None:
        facts.append(Fact(f"the main process itself is busy {pct(d.receive_s / d.wait_s)} of that wait "
                          "taking batches from the workers", "main_receive_share",
                          round(d.receive_s / d.wait_s, 3)))
    return facts


GPU_READS_FIX = ("read samples from the CPU: keep the dataset (or at least what __getitem__ turns into "
                  "Python numbers) on the CPU and copy each batch with pin_memory=True and "
                  "non_blocking=True, or index the GPU tensors with a whole batch of indices in the loop, "
                  "as one op; each int() or .item() of a GPU tensor waits for all the work queued before it")


def sampler_fix(function: str, workers: int, kind: str | None = None, at_start: float | None = None) -> str:
    """`kind`: what the sampler's time is (work_kinds: a weighted draw per index), whose remedy
    replaces the generic one. `at_start`: the seconds it takes at each epoch's start, where its
    time is there (the epoch's order made whole before the first index): already once an epoch."""
    more = ("more workers cannot take it over" if workers else
            "workers cannot take it over (num_workers > 0 leaves it in the main process)")
    if kind and remedy(kind):
        how = f"its time is {kind}: {remedy(kind)}"
    elif at_start is not None:
        how = ("it already does its work once an epoch, before the epoch's first batch: that work must "
               "get cheaper: whole-array ops over the epoch's indices (torch.randperm, np.flatnonzero of "
               "the labels, np.argsort) instead of Python over each index, or the order made once in "
               "__init__ where it can repeat")
    else:
        how = ("do its work once per epoch where its __iter__ starts (sort or bucket the whole dataset's "
               "indices once, cut them into batches, shuffle the batches) and yield the ready batches, "
               "or precompute them in __init__")
    when = "at each epoch's start" if at_start is not None else "one batch of indices at a time"
    return (f"make {function} cheaper: the DataLoader runs its sampler in the main process, {when}, so "
            f"{more}; {how}")


def steady_summary(ev: Evidence, share: float, d: Steady, lo: LoaderInfo, taking: bool = False) -> str:
    """`taking`: num_workers=0 is a fix (the workers wait for work, their batches dear to take):
    said so, not "the per-sample work must get cheaper", which that fix does not do."""
    loop = loop_name(ev)
    if d.sampler is not None and d.sampler_at_start is not None:
        return (f"{loop} waits for data {pct(share)} of the time: its sampler {d.sampler.function} "
                f"({d.sampler.location}) makes each epoch's order in the main process before the epoch's "
                f"first batch, ~{seconds(d.sampler_at_start)} at each epoch's start, and no worker can take "
                "that over")
    if d.sampler is not None:
        per = d.sampler.share * d.wait_s / batches_per_step(ev, lo)
        return (f"{loop} waits for data {pct(share)} of the time: its sampler {d.sampler.function} "
                f"({d.sampler.location}) picks each batch's indices in the main process, ~{ms(per)} a "
                "batch, and no worker can take that over")
    if d.gpu_reads is not None:
        return (f"{loop} waits for data {pct(share)} of the time: the dataset reads GPU memory sample by "
                f"sample ({d.gpu_reads.location}), and each read waits for the GPU to finish the work "
                "queued before it")
    if d.batch_indexed:
        name = (lo.dataset_class or "its dataset").rsplit(".", 1)[-1]
        size = (lo.batch_size or 1) * gathered_batches(ev, lo) if lo.batch_size else "B"
        return (f"{loop} waits for data {pct(share)} of the time: the DataLoader fetches {name} a sample "
                f"at a time and stacks {size} of them for each batch, per-sample Python that one index "
                "of its tensors a batch removes")
    if d.category != v.DATA_STARVED and taking and d.workers_idle is not None:
        return (f"{loop} waits for data {pct(share)} of the time while its workers wait for work "
                f"{pct(d.workers_idle)} of theirs: the batches are made, and taking them from the "
                "workers is the slow part")
    if d.category != v.DATA_STARVED:
        return (f"{loop} waits for data {pct(share)} of the time and the input pipeline "
                "already uses the CPU the run has: the per-sample work must get cheaper")
    unmeasured = not d.measured_cpu
    return (f"{loop} waits for data {pct(share)} of the time"
            + ("" if unmeasured else (", and the loader mostly waits on I/O" if d.io_bound else
                                      ", and more loading in parallel would hide it"))
            + (f" ({pct(d.state.blocked or 0)} blocked)" if d.io_bound else "")
            + ("; batches are made in the training process itself (num_workers=0)"
               if lo.num_workers == 0 and unmeasured else ""))


def unmeasured_question(category: str) -> str:
    """A trace records no CPU use: the verdict it did not pick stays open."""
    other = v.PREPROCESSING_BOUND if category == v.DATA_STARVED else v.DATA_STARVED
    return (f"the CPU use of the loader was not measured (a trace does not record it), so "
            f"{other} is not ruled out: if the CPU is already saturated, more workers will not "
            "help; `gpubottle run` measures it")


UNKNOWN_WORKERS_FIX = ("the loop waits on a multi-process DataLoader: raise num_workers (the trace does not "
                       "record how many it has), or prefetch_factor")


def try_workers_text(workers: int, speedup: float, torch_threads: int | None = None) -> str:
    # Measured: a JSON-parsing dataset on 2 cores went from an 8.4 ms step to 12.2 ms with two
    # workers (the model's 1.2 ms of math became 7.7 ms beside them): the try must say it can lose.
    threads = (f"torch's {torch_threads} math threads in the main process use"
               if torch_threads else "the main process's math uses")
    return (f"with the CPU near its limit, num_workers={workers} may still gain a little "
            f"(the model says up to {speedup:.2f}x, within its error here), or be slower: the "
            f"workers take the cores {threads}; try it and compare")
