"""Evaluation passes measured like a training loop, so the same rules diagnose them: per evaluation
loader, its batches are the steps (fetch to fetch), each with its wait; the CPU, the workers and the
stacks over its passes only.

Its workers start again for every pass unless they persist: a pass's first batches carry that
start beyond the loader's usual wait (start_up_wait_s), which is a fix of its own
(persistent_workers=True), as it is for a training loader's epochs.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter

from gpubottle.analysis.cpu import cpu_evidence
from gpubottle.analysis.phases import Carved, LoaderPass, merge, subtract
from gpubottle.analysis.samples import Samples
from gpubottle.analysis.stack_users import stack_evidence
from gpubottle.analysis.stacks import ThreadSamples, within
from gpubottle.collect.system import CoreBudget
from gpubottle.evidence import LoaderInfo, StepEvidence
from gpubottle.evidence.account import EVAL, PhaseEvidence


def _pass_steps(p: LoaderPass, steps: StepEvidence, workers: int, persistent: bool, first: bool,
                last: bool) -> None:
    """Append one pass's batches to `steps`: each from its fetch to the next one's (the first from
    iter(), the last to the pass's end, with the fetch that ends the pass folded into it). Workers
    that do not persist start again for every pass after the first and stop after every pass but
    the last: that is start-up wait, which persistent_workers=True removes."""
    drawn = [b for b in p.batches if not b.ended]
    closing = sum(b.t1 - b.t0 for b in p.batches if b.ended)
    waits = [b.t1 - b.t0 for b in drawn]
    usual = statistics.median(waits[workers:] or waits) if waits else 0.0
    for j, b in enumerate(drawn):
        lo = p.t0 if j == 0 else b.t0
        hi = drawn[j + 1].t0 if j + 1 < len(drawn) else p.t1
        # The first batch's wait includes iter() building the iterator (its workers' fork or spawn).
        build = p.build_s if j == 0 else 0.0
        wait = (b.t1 - b.t0) + (closing if j + 1 == len(drawn) else 0.0) + build
        steps.durations_s.append(max(hi - lo, wait))
        steps.input_wait_s.append(wait)
        steps.input_wait_cpu_s.append(float(b.cpu) if b.cpu is not None else None)
        steps.input_wait_run_queue_s.append(float(b.rq) if b.rq is not None else None)
        restart = 0.0
        if workers and not persistent:
            if j < workers and not first:  # each worker's first batch waits for that worker to start
                restart = max(0.0, (b.t1 - b.t0) - usual) + build
            if j + 1 == len(drawn) and not last:
                restart += closing  # stopping the workers at the pass's end
        steps.start_up_wait_s.append(restart)


def eval_phases(carved: Carved, loaders: list[LoaderInfo], group_of: dict[int, int], samples: Samples,
                threads: dict[int, ThreadSamples] | None, main_pid: int, budget: CoreBudget,
                interval: float | None, train_steps: int) -> list[PhaseEvidence]:
    by_group: dict[int, list[LoaderPass]] = {}
    for p in carved.evals:
        by_group.setdefault(group_of.get(p.loader, p.loader), []).append(p)
    by_id = {lo.id: lo for lo in loaders}
    out = []
    for gid, passes in by_group.items():
        info = by_id.get(gid) or LoaderInfo(id=gid)
        nw = info.num_workers or 0
        steps = StepEvidence(source="dataloader")
        ordered = sorted(passes, key=lambda p: p.t0)
        for k, p in enumerate(ordered):
            _pass_steps(p, steps, nw, bool(info.persistent_workers), k == 0, k + 1 == len(ordered))
        spans = subtract(merge([(p.t0, p.t1) for p in passes]), carved.saves)
        workers = {w for p in passes for w in p.workers}
        info.eval_passes = len(passes)
        sites = Counter(p.site for p in passes if p.site)
        loader = dataclasses.replace(info, batches=info.eval_batches, iterators=len(passes),
                                     worker_pids=sorted(workers) or info.worker_pids,
                                     iter_site=sites.most_common(1)[0][0] if sites else info.iter_site)
        cpu = cpu_evidence(samples, main_pid, workers, budget, spans, interval, fallback=False)
        stacks = None
        if threads is not None:
            mine = {pid: ts for pid, ts in threads.items() if pid == main_pid or pid in workers}
            stacks = stack_evidence(within(mine, spans), main_pid, workers, None)
        out.append(PhaseEvidence(
            phase=EVAL, seconds=round(sum(b - a for a, b in spans), 4), passes=len(passes),
            steps=steps, loader=loader, cpu=cpu, stacks=stacks,
            every_steps=round(train_steps / len(passes), 2) if train_steps else None,
            start_up_s=round(sum(steps.start_up_wait_s), 4)))
    return out
