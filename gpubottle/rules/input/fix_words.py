"""The input fixes' sentences: the worker plan and its limit, the step it should give, the cost per
batch."""

from __future__ import annotations

from gpubottle.analysis.work_kinds import LIST_TENSOR, remedy
from gpubottle.evidence import StackFrameShare
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import most_of
from gpubottle.units import ms, n_cores, pct

IO_TEXT = ("the time is in reading, not computing: read from local disk or memory, or cache samples "
           "after the first epoch")
# ...where the dataset already caches what it read (rules/input/first_epoch.py)
FIRST_READS_TEXT = ("the time is the first epoch's reads (the later epochs come from memory): read "
                    "them from local disk or memory, or pack the samples into one file read once")
PREFETCH_TEXT = "workers are idle on I/O: prefetch deeper so slow reads overlap (try it and compare)"
BATCHED_TEXT = ("move augmentation to batched tensor ops after collation (or onto the GPU), where one "
                "call handles the whole batch instead of Python per sample")


def restart_text(site: str | None, builds: int, start_method: str | None,
                 worker_init: str | None = None) -> str:
    once = (f" ({worker_init.split(' (')[0]}, the worker_init_fn, then runs once per worker, not "
            "once per epoch)" if worker_init else "")
    if builds > 1:
        return (f"the DataLoader at {site or 'its construction site'} is built anew {builds} "
                "times (every epoch), so its workers start again every epoch"
                + (" (spawn: each re-imports the script and torch)" if start_method == "spawn" else "")
                + ": build it once, before the epoch loop, with persistent_workers=True "
                "(persistent_workers alone, on a loader still built every epoch, changes nothing)" + once)
    return ("the DataLoader's workers stop at the end of every epoch and start again for the next: "
            "keep them alive with persistent_workers=True" + once)


def restart_expected(step_s: float, new_step_s: float, saved_per_epoch_s: float) -> str:
    return (f"step {ms(step_s)} -> about {ms(new_step_s)} ({step_s / new_step_s:.1f}x), about "
            f"{ms(saved_per_epoch_s)} saved per epoch")


def worker_why(needed: int, workers: int, cpu_limited: bool, io_bound: bool,
               cores_available: float | None, outside: float | None) -> str:
    """Why this many workers: what hides the wait, what limits it, and others' load meanwhile."""
    if needed > workers:
        why = (f" (the wait would vanish at about {needed}, but the CPU the run has limits the "
               "gain: the rest must come from cheaper loading)" if cpu_limited else
               f" (about {needed} would hide the wait entirely)")
    elif io_bound:
        why = " (loading waits on I/O, so workers overlap it without needing a core each)"
    elif cores_available is None:
        why = " (enough to make batches faster than the step uses them)"
    else:
        why = f" (the {n_cores(cores_available)} the run may use have room for them)"
    if outside is not None:
        why += (f"; other programs used {n_cores(outside)} meanwhile: while they run, expect "
                "less")
    return why


def ranks_caveat(ranks: int) -> str:
    return (f"the {ranks} ranks on this machine share its cores and their workers compete (set it "
            "on every rank: they run the same code): time it")


def shard_text(dataset_class: str | None) -> str:
    """An IterableDataset that does not split its stream: each worker would read all of it."""
    where = f"{dataset_class}." if dataset_class else "the "
    return (f"; first give each worker its share of the stream (in {where}__iter__: info = "
            "torch.utils.data.get_worker_info(), then keep the records where i % info.num_workers "
            "== info.id), or every worker reads all of it and each record is trained on "
            "num_workers times")


def worker_try_text(workers: int, up_to: float, caveat: str, shard: str) -> str:
    return (f"try num_workers={workers}: loading in parallel with the step could make it up to "
            f"{up_to:.1f}x faster, but {caveat}{shard}")


def worker_text(workers: int, why: str, shard: str) -> str:
    return f"load batches in parallel with the training step: num_workers={workers}{why}{shard}"


def worker_expected(step_s: float, new_step_s: float, wait_share: float, new_share: float,
                    sharded_first: bool) -> str:
    return (("once each worker reads its own share: " if sharded_first else "")
            + f"step {ms(step_s)} -> about {ms(new_step_s)} ({step_s / new_step_s:.1f}x), "
            f"input wait {pct(wait_share)} -> {pct(new_share)}")


def receive_text(per_batch_s: float, tensors: int | None = None) -> str:
    """`tensors`: how many its first batch held (each crosses as shared memory and a file
    descriptor); None: not seen."""
    pieces = f" ({tensors} tensors a batch, each crossing apart)" if tensors else ""
    # (Collation runs in the workers: a batch crosses as the tensors its samples' pieces stack into.)
    return (f"taking each batch from the workers costs the main process {ms(per_batch_s)} of CPU{pieces}, "
            "which more workers cannot remove: return fewer, larger tensors from each sample (one "
            "tensor, not a dict or tuple of many small ones), so each batch crosses in fewer pieces")


def collate_text(share: float | None, tensors: int, batch_size: int | None, receive_s: float | None) -> str:
    """torch's default_collate is most of making a batch of many tensors. `receive_s`: what taking
    each batch from the workers costs the main process, where it is a large part of the wait.
    `share` None: too few stack samples to measure it; the tensors' count says it."""
    of = f" of {batch_size}" if batch_size else ""
    crossing = (f", and each crosses from the workers apart: taking a batch costs the main process "
                f"{ms(receive_s)} of CPU" if receive_s is not None else "")
    takes = (f"takes {pct(share)} of making each batch" if share is not None else
             "is likely most of making each batch (too few stack samples to measure it)")
    return (f"torch's default_collate {takes}: it builds {tensors} "
            f"tensors a batch{of}, one for each position of the values a sample returns (a list of "
            f"Python numbers, or many small tensors){crossing}. Return one tensor a sample, made "
            "once: keep the values as one tensor built in __init__ (self.x = torch.tensor(rows)) "
            "and return self.x[i] from __getitem__; the batch then comes as one (batch, values) "
            "tensor, and code in the loop that stacks the columns back into rows goes. Try it and "
            "time it")


def no_workers_text(workers: int, idle: float, per_batch_s: float) -> str:
    return (f"the {workers} workers wait for work {pct(idle)} of the time while taking each of their "
            f"batches costs the main process {ms(per_batch_s)}: try num_workers=0, which makes each "
            "batch in the main process with nothing to hand over and leaves the workers' cores to "
            "the step; slower where making a batch costs more than taking it: time it (--try-fixes "
            "does)")


def shown(function: str) -> str:
    """A function as the report names it: a comprehension by the function it is in
    (`TextDS.__getitem__` for py-spy's `TextDS.__getitem__.<locals>.<listcomp>`)."""
    return function.split(".<locals>.", 1)[0]


def hot_text(top: StackFrameShare, others: list[StackFrameShare], in_workers: bool,
             comprehensions: float = 0.0) -> str:
    """`comprehensions`: the share in comprehensions `top` defines (its per-value Python)."""
    whose = "the loader workers' time" if in_workers else "the time spent making batches"
    then = ", ".join(f"{h.function} {h.share:.0%}" for h in others)
    if top.kind and remedy(top.kind):  # the stacks beneath it say what the time is
        # A list its own comprehensions build value by value, only to become a tensor: whole-array
        # ops remove both (a decode of 3,072 values: the comprehensions 44%, torch.tensor 56%).
        built = (f". Its comprehensions, which build that list value by value in Python, take another "
                 f"{pct(comprehensions)}: tensor ops on the whole array instead remove both the list "
                 "and the loop"
                 if top.kind == LIST_TENSOR and comprehensions >= th.COMPREHENSION_SHARE else "")
        return (f"{shown(top.function)} ({top.location}) takes {top.share:.0%} of {whose}, "
                f"{most_of(top.kind_share)} of it {top.kind}: {remedy(top.kind)}{built}"
                + (f" (then {then})" if then else ""))
    return (f"{shown(top.function)} ({top.location}) takes {top.share:.0%} of {whose}: make it cheaper first"
            + (f" (then {then})" if then else ""))


def collate_once_text(site: str, header: str, dataset: str | None) -> str:
    """A collate whose loop over the batch's samples does the same work for a sample every epoch
    (analysis/collate_samples.py): that work done once per sample, collate left putting a batch
    together (text tokenized in the collate, 4.1 ms a batch: tests/scripts/fixes/text_collate.py)."""
    into = f"{dataset}.__init__" if dataset else "the dataset's __init__"
    return (f". Its loop over the batch's samples ({site}: `{header}`) does the same work for a sample "
            "every epoch (the dataset's samples and the collate draw nothing at random): do it once "
            f"per sample instead, in {into}, keeping each sample's result (a tensor each), and leave "
            "collate only putting a batch together (torch.cat, pad_sequence, torch.stack): the steps "
            "then skip that work, paid once at the start (where the results fit in memory; over a "
            "single epoch it only moves). Try it and time it")


def own_code_text(function: str, location: str, share: float, comprehension: float,
                  in_workers: bool, workers_help: bool = True, same_every_epoch: bool | None = None,
                  beneath: str | None = None) -> str:
    """`workers_help`: more workers are the lead fix (else the run's cores are already in use and
    only cheaper work gains). `same_every_epoch`: the method draws nothing at random (analysis/
    sample_random.py), so its samples can be made once. `beneath`: the library function most of
    its samples are under (no kind gpubottle has a remedy for): said, not "its own lines"."""
    whose = "the loader workers' time" if in_workers else "the time spent making batches"
    what = (f"Python per element (comprehensions over the sample's values: {comprehension:.0%})"
            if comprehension >= th.COMPREHENSION_SHARE else
            f"most of it in {beneath}" if beneath else
            # py-spy sees Python frames only: a numpy or torch call on its own line leaves none.
            "its own lines, no Python library frame beneath them (its Python, or the C code of "
            "numpy or torch calls it makes)")
    why = ("each worker runs it whole, so making it cheaper gains whatever their number" if workers_help
           else "more workers would run it beside the step on cores already in use, so it must get "
                "cheaper")
    # Per-value Python: whole-array ops. Whole-array calls already (numpy's, torch's): each pays
    # its call's overhead per sample, which one call over the batch's samples pays once.
    whole = "tensor ops on whole arrays (one op for the sample, not one per value)"
    if comprehension < th.COMPREHENSION_SHARE:
        whole += (", or where they are already, the same math on the whole batch at once (a "
                  "collate_fn" + (", which runs in the workers" if in_workers else "") + ": one "
                  "call for all its samples instead of one per sample)")
    head = f"{function} ({location}) takes {min(1.0, share):.0%} of {whose}, {what}: {why}"
    if same_every_epoch:
        # (a tensor, not a list of them: forked workers copy the pages of the objects they read)
        return (f"{head}. It draws nothing at random, so each sample comes out the same every epoch: "
                "make them all once, in __init__, into tensors (self.x = torch.stack of what it "
                "builds now, the labels likewise; a list of tensors where lengths differ) and return "
                "self.x[i], so that each epoch after the first only indexes (where they fit in "
                f"memory; one epoch gains nothing); else try {whole}; time it")
    return (f"{head}: try {whole}, work done once in __init__ where a sample's result is the same "
            "every epoch, and time it")


def cost_fact(cpu_per_batch_s: float, step_s: float, cores_needed: float) -> str:
    return (f"each batch costs {ms(cpu_per_batch_s)} of CPU to prepare; to keep up with a "
            f"{ms(step_s)} step the pipeline needs {n_cores(cores_needed)}")


def batch_index_text(dataset_class: str, batch_size: int | None, sampler: str | None = None,
                     drop_last: bool = False, workers: int | None = None,
                     per_batch_s: float | None = None, getitem: str | None = None,
                     given: bool = False) -> str:
    """Whole batches indexed at once. `workers` None: a saved run from before torch's classes were
    read (the dataset a library's, its list indexing not known), said as a guess to compare.
    `getitem`: the dataset's own __getitem__, which only indexes its tensors (else torch's).
    `given`: the script passed its BatchSampler as batch_sampler=; the same one goes to sampler=."""
    name = dataset_class.rsplit(".", 1)[-1]
    size = batch_size or "B"
    # (shuffle= makes a RandomSampler or SequentialSampler; any other is the script's own sampler=)
    own = sampler not in (None, "RandomSampler", "SequentialSampler")
    inner = "sampler" if own else f"{sampler or 'RandomSampler'}(dataset)"
    call = (f"DataLoader(dataset, batch_size=None, sampler=BatchSampler({inner}, {size}, "
            f"drop_last={drop_last}))" + (f" (`sampler`: your {sampler}, which still draws the indices)"
                                          if own and not given else ""))
    if given:
        call = f"your BatchSampler passed as sampler= with batch_size=None, not as batch_sampler= ({call})"
    if workers is None:
        return (f"the time is the loader indexing {name} one sample at a time and collating {size} of "
                f"them a batch (Python per sample, no code of yours): index whole batches instead, {call}, "
                "which hands the dataset each batch's indices at once (TensorDataset takes them; your "
                "own dataset needs a __getitem__ that takes a list of indices): try it and compare")
    cost = f" (~{ms(per_batch_s)} a batch here)" if per_batch_s else ""
    where = (f", in each of the {workers} worker{'s' if workers != 1 else ''}, which then hands the "
             "batch across" if workers else "")
    none = (" with num_workers=0" if workers else "")
    handed = (", which workers would only hand across (2 workers on 2 cores: slower than none)"
              if workers else "")
    return (f"the DataLoader fetches {name} one sample at a time: {size} __getitem__ calls and a "
            f"stack of {size} rows for each batch{cost}{where}, Python per sample"
            + (f" (its __getitem__ at {getitem} only indexes its tensors, so it takes a list of indices as "
               "written)" if getitem else " and no code of yours") + "; "
            f"hand it each batch's indices at once instead{none}, {call}: one index of its tensors a "
            f"batch{handed}; try it and time it (--try-fixes does, and --patch writes the change it "
            "measured)")


def cheaper_text(dataset_class: str | None, factor: float, iterable: bool = False,
                 known: bool = False, collate: str | None = None) -> str:
    """`iterable`: an IterableDataset, whose samples come from its __iter__. `known`: a fix above
    says what kind of work its time is (and its remedy): the generic ways are not repeated.
    `collate`: the loader's time is in the script's own collate_fn (by that name), not in the
    dataset's per-sample work."""
    if collate:
        how = ("the fix above says what its time goes to" if known else
               "whole-tensor ops in place of its loops over samples and values: torch.stack, "
               "pad_sequence, one slice written a sample")
        return (f"make the batch work cheaper: {collate} must get {_by(factor)} per batch for the loop to "
                f"stop waiting ({how})")
    method = "__iter__" if iterable else "__getitem__"
    # (kind-neutral: "decode at lower resolution" was said of spectrogram and WAV datasets too)
    how = ("the fix above says what its time goes to" if known else
           "keep what comes out the same every epoch instead of making it again, and do the rest on "
           "whole arrays rather than value by value")
    return (f"make per-sample work cheaper: {dataset_class or 'the dataset'}.{method} must get "
            f"{_by(factor)} per batch for the loop to stop waiting ({how})")


def _by(factor: float) -> str:
    """How much cheaper, as a reader takes it: "about 1.0x cheaper" (a batch that costs about what
    the step's computation does) read as no change at all."""
    if factor >= 1.25:
        return f"about {factor:.1f}x cheaper"
    return f"cheaper than the step's own computation, which it now matches ({factor:.2f}x of it)"


def fewer_workers_text(workers: int, cores_available: float) -> str:
    return (f"num_workers={workers} is more than the {n_cores(cores_available)} available: if the "
            "workers compute rather than wait, fewer may do as well with less memory; try it and "
            "compare")


def pool_text(workers: int, share: float, run_queue: float | None, cores: float | None) -> str:
    """The workers' native thread pools oversubscribe the cores (fixes.pool_fix)."""
    waited = f" (they waited for a core {pct(run_queue)} of the time)" if run_queue else ""
    on = f" on {n_cores(cores)}" if cores else ""
    return (f"each of the {workers} workers computes on more threads than its own: {pct(share)} of "
            "their CPU is in other threads, a native library's pool (numpy's BLAS starts a thread per "
            "core in every worker; OpenCV, numba and MKL alike), where torch runs one thread in a "
            f"worker. {workers} workers' pools{on} wait for each other{waited}. One thread each: "
            "OPENBLAS_NUM_THREADS=1 in the environment where the job starts (numpy's pip wheels; "
            "MKL_NUM_THREADS=1 for an MKL build, which also sets torch's own threads: "
            "torch.set_num_threads(n) at the start restores those), or in a worker_init_fn, "
            "threadpoolctl.threadpool_limits(1) (cv2.setNumThreads(0) for OpenCV). 2 workers doing "
            "two matmuls a sample on 2 cores: 24-26 s, 10-10.5 s so, on a test machine; try it and "
            "time it")
