"""The straggler finding, said: the rank the others wait for, in the terms it was told by (its step
time, or its own work against the collectives' waits), its workers, and where to look."""

from __future__ import annotations

from gpubottle.evidence import RankEvidence
from gpubottle.report import Fact, Fix
from gpubottle.rules.ranks.decide import Straggler
from gpubottle.units import cores, ms, pct


def work(r: RankEvidence) -> str:
    if r.communication_share is not None:
        hidden = (f" ({pct(r.communication_overlap)} of it under compute)"
                  if r.communication_overlap is not None else "")
        return f"communication {pct(r.communication_share)}{hidden}"
    return f"input wait {pct(r.input_share or 0.0)}, computing {pct(r.busy_share or 0.0)}"


def straggler_facts(d: Straggler) -> list[Fact]:
    slow = d.slow
    facts: list[Fact] = []
    if d.why:
        facts.append(Fact(f"{slow.name}: {d.why}"))
    if d.how == "step":
        med = d.median_other_step_s
        ratio = (slow.mean_step_s or 0.0) / med if med > 0 else 1.0
        facts.append(Fact(f"{slow.name} takes {ms(slow.mean_step_s or 0.0)} a step, {ratio:.2f}x the "
                          f"median of the other ranks ({ms(med)})", "straggler_lost", round(d.lost, 4)))
    else:
        facts.append(Fact(
            f"of each step, {slow.name} spends {work(slow)}; "
            + "; ".join(f"{r.name} {work(r)}" for r in d.others[:3])
            + ": the other ranks wait for it at the collectives the rest of their step",
            "straggler_lost", round(d.lost, 4)))
    if slow.workers:
        starved = (f", waiting for a core {pct(slow.worker_run_queue)} of the time"
                   if slow.worker_run_queue is not None else "")
        facts.append(Fact(f"its {slow.workers} DataLoader worker(s) use "
                          f"{cores(slow.workers_cores or 0.0)} cores{starved}"))
    return facts


def straggler_fix(d: Straggler) -> Fix:
    return Fix(text=f"make {d.slow.name} faster first: the findings and fixes here are its own. If the "
                    "other ranks run the same code and settings, look at what differs: its share "
                    "of the data (uneven shards, larger samples), its machine (other load, fewer "
                    f"cores) or work only it does (`if rank == {d.slow.rank}:` logging, evaluation)")


def straggler_summary(d: Straggler) -> str:
    why = f": {d.why}" if d.why else ""
    return (f"{d.slow.name} sets the pace of the {d.ranks} ranks, the others wait for it "
            f"{pct(d.lost)} of each step{why}")
