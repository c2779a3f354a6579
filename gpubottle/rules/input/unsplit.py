"""unsharded-data for a DataLoader's workers: an IterableDataset read by two or more workers whose
code does not split its stream between them (no torch.utils.data.get_worker_info() in the class,
no worker_init_fn; probes/torch_hooks.py reads it). torch runs the whole __iter__ in every worker,
so each record is trained on num_workers times an epoch and an epoch takes num_workers times the
batches it needs, whatever the verdict: a compute-bound run says nothing else of it. The ranks'
form of the same defect (no DistributedSampler) is rules/ranks."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import Repeated, main_loader, repeated, run_expected
from gpubottle.rules.input.fix_words import shard_text


class Unsplit(Repeated):
    """The training loader's workers, each iterating its whole IterableDataset stream."""

    @property
    def workers(self) -> int:
        return self.copies


def decide_unsplit(ev: Evidence) -> Unsplit | None:
    lo = main_loader(ev)
    if lo is None or not lo.iterable or lo.shards is not False or (lo.num_workers or 0) < 2:
        return None
    return repeated(ev, lo, int(lo.num_workers or 0), Unsplit)


def _fix(d: Unsplit, run_s: float | None) -> Fix:
    """The split in the dataset's __iter__; the run's time predicted only where it ended by finishing
    its epochs (each worker then reads 1/num_workers of the stream at the pace it read all of it)."""
    text = shard_text(d.loader.dataset_class).removeprefix("; first ")
    text = text.split("), or every worker")[0] + ")"
    text += f"; an epoch then takes 1/{d.workers} of the batches, each record trained on once"
    new_run = d.shorter_run(run_s)
    if new_run and run_s and run_s / new_run < 1 + th.MIN_FIX_GAIN:
        new_run = None  # a run mostly start-up: the split is still the fix, without a number
    return Fix(text=text, where=d.loader.dataset_getitem or d.loader.site,
               expected=run_expected(run_s, new_run), expected_run_s=round(new_run, 3) if new_run else None)


def unsplit_stream(ev: Evidence) -> list[Finding]:
    d = decide_unsplit(ev)
    if d is None:
        return []
    lo, run_s = d.loader, ev.run.duration_s
    name = lo.dataset_class or "IterableDataset"
    facts = [Fact(f"DataLoader at {lo.site or 'an unknown line'}: num_workers={d.workers}, "
                  f"IterableDataset {name}, whose code never asks which worker it runs in "
                  "(get_worker_info()) and no worker_init_fn", "num_workers", d.workers)]
    if d.epoch_batches:
        facts.append(Fact(f"an epoch took {d.epoch_batches} batches; split between the workers it "
                          f"takes about {-(-d.epoch_batches // d.workers)}", "epoch_batches",
                          d.epoch_batches))
    summary = (f"each of the DataLoader's {d.workers} workers iterates the whole {name} stream: every "
               f"record is trained on {d.workers} times an epoch, and an epoch takes {d.workers}x the "
               "batches it needs")
    return [Finding(v.UNSHARDED_DATA, d.severity(run_s), None, summary, facts, [_fix(d, run_s)],
                    run_share=d.run_share(run_s))]
