"""The straggler finding, said: the rank the others wait for, in the terms it was told by (its step
time, or its own work against the collectives' waits), its workers, and where to look."""

from __future__ import annotations

from gpubottle.evidence import RankEvidence
from gpubottle.report import Fact, Fix
from gpubottle.rules.common import run_expected
from gpubottle.rules.ranks.decide import Straggler, Uneven, Unsharded
from gpubottle.units import ms, n_cores, pct


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
    if d.node_ranks:
        names = ", ".join(r.name for r in [slow, *d.node_ranks])
        facts.append(Fact(f"every rank on {slow.node} ({names}) does more of its own work than any rank on "
                          "the other nodes: the node sets the pace"))
    if d.node_outside is not None:
        facts.append(Fact(f"other programs used {n_cores(d.node_outside)} on {slow.node}, far more than "
                          "on the other nodes", "node_outside_cores", round(d.node_outside, 3)))
    if slow.workers:
        starved = (f", waiting for a core {pct(slow.worker_run_queue)} of the time"
                   if slow.worker_run_queue is not None else "")
        facts.append(Fact(f"its {slow.workers} DataLoader worker(s) use "
                          f"{n_cores(slow.workers_cores or 0.0)}{starved}"))
    return facts


def straggler_fix(d: Straggler) -> Fix:
    if d.node_ranks:
        load = (" (other programs run there: move them, or the job, off that node)"
                if d.node_outside is not None else "")
        return Fix(text=f"make node {d.slow.node} faster first{load}: the findings and fixes here are "
                        f"{d.slow.name}'s. Its ranks run the same code as the others: look at what the node "
                        "differs in (its storage, its CPU and other load, its GPUs' clocks, its network)")
    return Fix(text=f"make {d.slow.name} faster first: the findings and fixes here are its own. If the "
                    "other ranks run the same code and settings, look at what differs: its share "
                    "of the data (uneven shards, larger samples), its machine (other load, fewer "
                    f"cores) or work only it does (`if rank == {d.slow.rank}:` logging, evaluation)")


def straggler_summary(d: Straggler) -> str:
    why = f": {d.why}" if d.why else ""
    if d.node_ranks:
        return (f"node {d.slow.node} ({', '.join(r.name for r in [d.slow, *d.node_ranks])}) sets the pace "
                f"of the {d.ranks} ranks, the others wait for it {pct(d.lost)} of each step{why}")
    return (f"{d.slow.name} sets the pace of the {d.ranks} ranks, the others wait for it "
            f"{pct(d.lost)} of each step{why}")


def unsharded_summary(d: Unsharded) -> str:
    return (f"every rank of the {d.world}-rank job iterates the whole dataset: each sample is trained "
            f"on {d.world} times an epoch, and an epoch takes {d.world}x the steps it needs")


def unsharded_facts(d: Unsharded) -> list[Fact]:
    lo = d.loader
    size = f"{lo.dataset_len} samples" if lo.dataset_len else "the dataset"
    facts = [Fact(f"DataLoader at {lo.site or 'an unknown line'}: sampler {lo.sampler or 'unknown'}, "
                  f"which gives each of the {d.world} ranks all of {size}", "world_size", d.world)]
    if d.epoch_batches:
        facts.append(Fact(f"an epoch takes {d.epoch_batches} batches on each rank; split by rank it takes "
                          f"{-(-d.epoch_batches // d.world)}", "epoch_batches", d.epoch_batches))
    return facts


def unsharded_fix(d: Unsharded, run_s: float | None) -> Fix:
    """DistributedSampler at the user's line; the run's time predicted only where it ended by
    finishing its epochs (a run of fixed steps takes as long, over a dataset each rank sees once)."""
    if d.loader.world is None:
        # No process group was up where the loader was built (a Hogwild job under mp.spawn, a
        # rank that builds its loader before init_process_group): DistributedSampler(dataset)
        # asks torch.distributed for the world and raises there.
        sampler = (f"DistributedSampler(dataset, num_replicas={d.world}, rank=rank), ...) with the "
                   "process's rank (mp.spawn passes it first; no process group was up where the loader "
                   "was built, and without both the sampler asks for one and raises)")
    else:
        sampler = "DistributedSampler(dataset), ...)"
    text = (f"give each rank its share: DataLoader(dataset, sampler={sampler} "
            "(drop shuffle=True: the sampler shuffles) and call sampler.set_epoch(epoch) at the start "
            "of each epoch")
    new_run = d.shorter_run(run_s)
    if new_run is not None:
        text += f"; the epochs then take 1/{d.world} of the steps"
    else:
        text += (f"; each epoch then takes 1/{d.world} of the steps (a run of fixed steps sees each "
                 f"sample once instead of {d.world} times)")
    return Fix(text=text, where=d.loader.site, expected=run_expected(run_s, new_run),
               expected_run_s=round(new_run, 3) if new_run else None)


def uneven_summary(d: Uneven) -> str:
    return (f"the job's ranks take different numbers of steps: {d.fewest.name} {d.fewest.steps}, "
            f"{d.most.name} {d.most.steps}")


def uneven_fix() -> Fix:
    return Fix(text="give every rank the same number of batches: DistributedSampler(dataset, "
                    "drop_last=True) or DataLoader(drop_last=True), or shards of equal size; ranks that "
                    "run out first wait for the others at the end of each epoch (or hang at a "
                    "collective the others never reach)")
