"""A loop that makes its own batches, said: the facts, the summary, and the fix (DataLoader workers in
parallel with the step, or cheaper batch-making)."""

from __future__ import annotations

from gpubottle.report import Fact, Fix
from gpubottle.rules.input.loop import LoopInput
from gpubottle.units import cores, ms, n_cores, pct


def loop_facts(d: LoopInput) -> list[Fact]:
    facts = [Fact(f"no DataLoader: the main process spends {pct(d.share)} of its time making the next "
                  f"batch in the loop itself ({d.samples} stack samples)", "input_share", round(d.share, 4))]
    if d.hot is not None:
        facts.append(Fact(f"most of it in {d.hot.function} ({d.hot.location}): {pct(d.hot.share)} of those "
                          "samples", "hot_share", d.hot.share))
    if d.run_cores is not None and d.cores_available:
        facts.append(Fact(f"the run uses {cores(d.run_cores)} of the {n_cores(d.cores_available)} it "
                          "may use", "run_cores", round(d.run_cores, 3)))
    return facts


def loop_fixes(d: LoopInput) -> list[Fix]:
    where = d.hot.location if d.hot is not None else None
    if not d.parallel:
        return [Fix(text=f"make the batch-making code cheaper: it costs {ms(d.batch_s)} per "
                         f"{ms(d.step_s)} step and the run's CPU has no room to parallelise it", where=where)]
    p = d.plan
    return [Fix(
        text=("" if p.reliable else f"try (up to {d.gain:.1f}x, but {p.busy_caveat()}): ")
        + "make batches in DataLoader workers, in parallel with the step: wrap the batch "
        f"generator in a torch.utils.data.IterableDataset and iterate "
        f"DataLoader(dataset, batch_size=None, num_workers={p.workers}); each worker runs "
        "the dataset's __iter__, so give each its share of the batches "
        "(torch.utils.data.get_worker_info())",
        where=where, change={"num_workers": [0, p.workers]},
        expected=f"step {ms(d.step_s)} -> about {ms(p.step_s)} ({d.gain:.1f}x)" if p.reliable else None,
        expected_step_s=round(p.step_s, 6) if p.reliable else None)]


def loop_summary(d: LoopInput) -> str:
    if d.parallel:
        return (f"the loop makes its own batches {pct(d.share)} of the time while CPU capacity sits "
                "unused: move batch making into DataLoader workers")
    return (f"the loop makes its own batches {pct(d.share)} of the time and the CPU is already busy: "
            "the batch-making work must get cheaper")
