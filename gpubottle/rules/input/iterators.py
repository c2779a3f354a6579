"""A loop that starts a new iteration of its DataLoader for (nearly) every batch: `x, y =
next(iter(loader))` in the loop, a common way to take "one batch". Each iter() builds a new
iterator (with workers: starts them, and the dropped one stops its own), and with shuffle=False
every one of them yields the dataset's first batch again. Neither persistent workers nor more
workers is the fix: the iterator is built once, outside the loop.

Told from the probes' counts (iterators against the batches the training drew, on a dataset that
holds many batches) and timed by them: the iter() calls themselves, and the waits for each
iterator's first batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, LoaderInfo, Measured
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.units import ms, pct


@dataclass
class IteratorPerBatch:
    lo: LoaderInfo
    per_iterator: float  # batches drawn per iterator
    build_s: float  # mean seconds an iter() call took (its workers starting)
    share: float  # of the measured steps' time: building iterators and waiting for their batch
    step_s: float
    same_batch: bool  # no shuffling: every iterator starts at the dataset's first batch


def decide_iterators(ev: Evidence, w: Measured, lo: LoaderInfo) -> IteratorPerBatch | None:
    if lo.iterators < th.ITERATORS_PER_BATCH_MIN or not lo.batches or lo.builds * 2 > lo.iterators:
        return None  # (a DataLoader built anew for each batch is the rebuilt-loader case)
    per = lo.batches / lo.iterators
    room = (lo.dataset_len or 0) / max(1, lo.batch_size or 1)  # batches one iterator could give
    if per > th.ITERATORS_PER_BATCH_MAX or room < 2 * th.ITERATORS_PER_BATCH_MAX:
        return None
    build = lo.iter_build_s / lo.iterators
    share = min(1.0, (w.mean_wait_s + build * min(1.0, 1.0 / per)) / w.mean_step_s)
    return IteratorPerBatch(lo, round(per, 2), build, share, w.mean_step_s,
                            lo.sampler == "SequentialSampler")


def iterator_finding(d: IteratorPerBatch) -> Finding:
    lo = d.lo
    where = lo.iter_site or lo.site
    workers = lo.num_workers or 0
    facts = [
        Fact(f"the DataLoader at {lo.site} was iterated anew {lo.iterators} times for "
             f"{lo.batches} training batches ({d.per_iterator:g} a time)"
             + (f", from {lo.iter_site}" if lo.iter_site else ""), "batches_per_iterator", d.per_iterator),
        Fact(f"each iter() took {ms(d.build_s)}"
             + (f" (starting its {workers} worker processes; the dropped iterator stops its own)"
                if workers else "")
             + f"; with the wait for its first batch, {pct(d.share)} of each {ms(d.step_s)} step"),
    ]
    if d.same_batch:
        size = f"{lo.batch_size} " if lo.batch_size else ""
        facts.append(Fact("the loader does not shuffle: every new iterator starts at the dataset's "
                          f"first batch, so each step trains on the same {size}samples"))
    fix = Fix(
        text=("build the iterator once, before the loop: `it = iter(loader)`, then `x, y = next(it)` "
              "each step, starting a new one on StopIteration (an epoch ends); or loop `for x, y in "
              "loader:`" + (f": its {workers} workers then start once an epoch instead of every "
                            "batch" if workers else "")
              + (", and the steps go through the whole dataset instead of its first batch"
                 if d.same_batch else "")
              + "; try it and time it"),
        where=where)
    summary = ("the loop starts a new iteration of its DataLoader for every batch"
               + (f" ({lo.iter_site})" if lo.iter_site else "")
               + f": {pct(d.share)} of each step goes to building iterators"
               + (" and starting their workers" if workers else "") + " and waiting for their first batch"
               + ("; and every step gets the same first batch" if d.same_batch else ""))
    severity = "critical" if d.same_batch else th.severity_for_share(d.share)
    return Finding(v.DATA_STARVED, severity, round(d.share, 4), summary, facts, [fix])
