"""replayed-batches: the loop trains on batches itertools.cycle kept. `cycle(loader)` iterates the
loader once, keeps every batch it yields, and once that pass ends gives the kept ones again in the
same order, for the rest of the run: the loader never reshuffles, random augmentation in
__getitem__ is never drawn again, and the whole pass's batches stay in memory (a dataset of many GB
is that much RAM; the run grows through the first epoch). Measured here: a 6000-image loader of
3x128x128 floats under cycle held 1.2 GB by its second epoch, and the report said compute-bound
and nothing else. The loader's counters show it: one iterator, started inside cycle(...) (the
probes read its line), a pass that ended, and steps that went on after it."""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, LoaderInfo
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import main_loader
from gpubottle.units import gib, ms, pct


@dataclass(frozen=True)
class Replayed:
    loader: LoaderInfo
    passed: int  # the batches of the loader's one pass
    steps: int  # the loop's steps over the run
    held_bytes: int | None  # the kept pass's tensors, from its first batch's size

    @property
    def replays(self) -> int:
        """Steps after the pass, at one batch a step: at least this many replayed batches."""
        return max(0, self.steps - self.passed)


def decide_replayed(ev: Evidence) -> Replayed | None:
    lo = main_loader(ev)
    if lo is None or not lo.iter_cycled or lo.iterators != 1 or not lo.epoch_batches:
        return None
    passed = lo.epoch_batches[0]
    steps = len(ev.steps.durations_s)
    if passed < 1 or steps - passed < th.REPLAYED_MIN_SHARE * passed:
        return None
    held = lo.batch_bytes * passed if lo.batch_bytes else None
    return Replayed(lo, passed, steps, held)


def _fix(d: Replayed) -> Fix:
    lo = d.loader
    waits = (lo.epoch_wait_s[0] if lo.epoch_wait_s else 0.0) * d.passed  # the one pass's waits
    keep = (" (with persistent_workers=True on the DataLoader its workers stay between passes)"
            if lo.num_workers and not lo.persistent_workers else "")
    return Fix(text=("iterate the loader anew at each pass instead: def forever(loader): while True: "
                     "yield from loader, and forever(loader) where cycle(loader) is; each pass then "
                     "reshuffles and makes new batches, and memory holds a few batches, not the pass"
                     f"{keep}. Each pass then waits for its batches as the first did ({ms(waits)} of "
                     f"waits over its {d.passed} batches here)"),
               where=lo.iter_site or lo.site)


def replayed_batches(ev: Evidence) -> list[Finding]:
    d = decide_replayed(ev)
    if d is None:
        return []
    lo = d.loader
    order = ("in the same order (shuffle=True shuffles the loader's passes, and there was one)"
             if lo.sampler == "RandomSampler" else "in the same order")
    held = f", about {gib(d.held_bytes)}," if d.held_bytes else ""
    summary = (f"itertools.cycle(loader) at {lo.iter_site or 'the loop'} replays the loader's first "
               f"pass: {d.replays} of the loop's {d.steps} steps ({pct(d.replays / d.steps)}) trained "
               f"again on batches it had trained on, {order}, with no new random "
               f"augmentation, and it holds all {d.passed} of them{held} for the rest of the run")
    facts = [Fact(f"DataLoader at {lo.site or 'an unknown line'}: one pass of {d.passed} batches"
                  + (f" ({lo.dataset_len} samples)" if lo.dataset_len else "")
                  + ", its iterator started once, inside itertools.cycle", "pass_batches", d.passed)]
    if d.held_bytes and lo.batch_bytes:
        facts.append(Fact(f"a batch holds {gib(lo.batch_bytes)} of tensors: the kept pass about "
                          f"{gib(d.held_bytes)}, which grows with the dataset (memory climbs through "
                          "the first epoch)", "held_bytes", d.held_bytes))
    return [Finding(v.REPLAYED_BATCHES, "warning", None, summary, facts, [_fix(d)])]
