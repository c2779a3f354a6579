"""The loop waits for batches: data-starved or preprocessing-bound, and why.

Three causes, told apart by measurement:
- workers starting again every epoch (a rebuilt loader, or workers that do not persist): the
  first batch of each epoch waits for them;
- loading that more parallelism would hide: a loader that mostly waits (I/O, a remote store), or
  one that computes while the run leaves CPU unused; the worker plan predicts the gain;
- per-sample work the CPU the run has cannot keep up with: it must get cheaper.
"""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.analysis.work_kinds import wasted
from gpubottle.evidence import Evidence, LoaderInfo, Measured
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import (
    batches_a_step,
    batches_per_step,
    enough_steps,
    gathered_batches,
    main_loader,
)
from gpubottle.rules.gpu.words import breakdown_fact
from gpubottle.rules.input import loop_words, words
from gpubottle.rules.input.background import background_finding, decide_background
from gpubottle.rules.input.decide import (
    Steady,
    decide_steady,
    decide_wait,
    more_workers_gain,
    more_workers_to_try,
)
from gpubottle.rules.input.first_epoch import cached_worker_fixes, first_epoch_fact, first_epoch_reads
from gpubottle.rules.input.fix_words import BATCHED_TEXT
from gpubottle.rules.input.fixes import (
    batch_index_fix,
    cheaper_fixes,
    collate_fix,
    gather_fix,
    hot_fix,
    io_fix,
    no_workers_fix,
    own_code_fix,
    pool_fix,
    prefetch_fix,
    receive_fix,
    restart_fix,
    sample_work_known,
    worker_fix,
)
from gpubottle.rules.input.iterators import decide_iterators, iterator_finding
from gpubottle.rules.input.loop import decide_generator_loop
from gpubottle.rules.input.producer import producer_wait


def input_pipeline(ev: Evidence) -> list[Finding]:
    w = ev.measured()
    lo = main_loader(ev)
    if w is None or not enough_steps(ev, w):
        return []
    if lo is None:
        return generator_loop(ev, w) + producer_wait(ev, w)
    if lo.off_loop_fetch_s is not None:  # fetched by a background thread: not the loop's waits
        bg = decide_background(ev, w, lo)
        return [background_finding(bg)] if bg is not None else []
    per_batch = decide_iterators(ev, w, lo)
    if per_batch is not None and per_batch.share >= th.INPUT_WAIT_INFO:
        return [iterator_finding(per_batch)]  # (persistent or more workers would not help it)
    wait = decide_wait(ev, w)
    if wait is None:
        return []
    share, start_up, steady, start_share = wait.share, wait.start_up_s, wait.steady_s, wait.start_share
    facts = [words.wait_fact(w, batches_a_step(ev, lo), gathered_batches(ev, lo)), words.loader_fact(lo)]
    if ev.gpu is not None and ev.gpu.breakdown:
        facts.append(breakdown_fact(ev.gpu))
    restart = None
    if wait.restarts:
        epochs = max(1, lo.iterators - 1)
        facts.append(words.restart_fact(lo, start_share, epochs))
        restart = restart_fix(lo, w, start_up, epochs)
    if not wait.steady:
        return [Finding(v.DATA_STARVED, th.severity_for_share(share), round(share, 4),
                        words.restart_summary(ev, share, start_share), facts,
                        [restart] if restart is not None else [])]
    d = decide_steady(ev, w, lo, steady, start_up)
    facts += words.steady_facts(ev, d, lo.num_workers or 0)
    fixes, more_facts = _steady_fixes(ev, w, lo, d, share, restart)
    facts += more_facts
    once = first_epoch_reads(lo)
    if once is not None:
        facts.append(first_epoch_fact(*once, len(lo.epoch_wait_s)))
        fixes = cached_worker_fixes(fixes, lo)
    if restart is not None and start_up >= steady:
        # Most of the wait is workers starting: that is the verdict, the steady wait comes after.
        return [Finding(v.DATA_STARVED, th.severity_for_share(share), round(share, 4),
                        words.restart_summary(ev, share, start_share), facts, fixes)]
    taking = any(f.change.get("num_workers", [None, None])[1] == 0 for f in fixes)
    return [Finding(d.category, th.severity_for_share(share), round(share, 4),
                    words.steady_summary(ev, share, d, lo, taking), facts, fixes,
                    None if d.measured_cpu else words.unmeasured_question(d.category))]


def _steady_fixes(ev: Evidence, w: Measured, lo: LoaderInfo, d: Steady, share: float,
                  restart: Fix | None) -> tuple[list[Fix], list[Fact]]:
    """The fixes for the steady wait, in the order they are worth trying, and any fact they rest on."""
    nw = lo.num_workers or 0
    plan = d.plan
    facts: list[Fact] = []
    fixes: list[Fix] = []
    first_restart = restart is not None and d.start_up_s >= d.wait_s
    if first_restart and restart is not None:
        fixes.append(restart)
    pools = pool_fix(ev, lo)
    if pools is not None:  # the workers' own threads fight for the cores: whatever else, this first
        fixes.append(pools)
    known = sample_work_known(ev, lo)
    hot = hot_fix(ev, lo)
    batched = None
    gathered = gathered_batches(ev, lo)
    if gathered > 1:  # (the step's batch made by the loader: what the next fixes then work on)
        fixes.append(gather_fix(lo, gathered))
    if d.batch_indexed:
        # Indexing whole batches removes the work; more workers would each run it per sample and
        # hand it across. num_workers=0 alone (no_workers_fix, where the workers idle) stays after it.
        # (gathered: the step's batch is the one indexed whole, its wait the step's)
        per = d.wait_s if gathered > 1 else d.wait_s / batches_per_step(ev, lo)
        batched = batch_index_fix(lo, per if not nw else None,
                                  (lo.batch_size or 1) * gathered if gathered > 1 else None)
        fixes.append(batched)
    collate = collate_fix(ev, w, lo, d.wait_s)
    if collate is not None:
        # The samples' values collated one position at a time: work its cure removes. More workers
        # are not offered: each of the batch's many tensors would cross from them apart (257 a
        # batch of 64: 2 workers took 174 s over 12 epochs that took 5 s without them).
        fixes.append(collate)
    # (a sampler's known work is said by the sampler's own fix, with its remedy)
    if known is not None and wasted(known.kind) and hot is not None and d.sampler is None:
        # Work the remedy removes (a DataFrame row or a file per sample): before more workers,
        # which would run the waste in parallel (measured: 2 workers 10.1 s, none 8.6 s, the
        # arrays made once 5.7 s).
        fixes.append(hot)
        hot = None
    if d.gpu_reads is not None:
        return fixes + [Fix(text=words.GPU_READS_FIX, where=d.gpu_reads.location)], facts
    if d.sampler is not None:
        return fixes + [Fix(text=words.sampler_fix(d.sampler.function, nw, d.sampler.kind,
                                                         d.sampler_at_start),
                            where=d.sampler.location)], facts
    if d.category == v.DATA_STARVED:
        if lo.num_workers is None:  # a trace shows a multi-process loader, not its worker count
            fixes.append(Fix(text=words.UNKNOWN_WORKERS_FIX))
        elif plan is not None and more_workers_gain(d, nw) and collate is None and batched is None:
            fixes.append(worker_fix(ev, w, lo, plan, d.io_bound, d.start_up_s, share))
        elif d.io_bound and (pf := prefetch_fix(lo)) is not None:
            fixes.append(pf)
        if not d.io_bound and hot is None and batched is None and (own := own_code_fix(ev, lo)) is not None:
            fixes.append(own)
    taking = [no_workers_fix(ev, w, lo, d.wait_s, d.workers_idle),
              receive_fix(ev, w, lo, d.wait_s) if collate is None and batched is None else None]
    # Per-sample work of a known kind (a file unpickled per sample) is the cause: it comes first.
    fixes += [f for f in ([hot, *taking] if known is not None else [*taking, hot]) if f is not None]
    if d.category == v.DATA_STARVED and d.io_bound:
        fixes.append(io_fix(lo))
    if d.category == v.PREPROCESSING_BOUND:
        more, fact = cheaper_fixes(ev, w, lo, d.wait_s, collated=collate is not None)
        if fact is not None:
            facts.append(Fact(fact))
        own = (own_code_fix(ev, lo, workers_help=False) if not d.io_bound and hot is None and batched is None
               else None)
        if own is not None:  # the sample's own Python, named: not the generic augmentation advice
            fixes.append(own)
            more = [f for f in more if f.text != BATCHED_TEXT]
        fixes += more
        if plan is not None and more_workers_to_try(d, nw) and collate is None and batched is None:
            threads = ev.cpu.torch_threads if ev.cpu is not None else None
            fixes.append(Fix(text=words.try_workers_text(plan.workers, d.speedup, threads),
                             where=lo.site, change={"num_workers": [nw, plan.workers]}))
    if restart is not None and not first_restart:
        fixes.append(restart)
    return fixes, facts


def generator_loop(ev: Evidence, w: Measured) -> list[Finding]:
    d = decide_generator_loop(ev, w)
    if d is None:
        return []
    return [Finding(v.DATA_STARVED if d.parallel else v.PREPROCESSING_BOUND,
                    th.severity_for_share(d.share), round(d.share, 4), loop_words.loop_summary(d),
                    loop_words.loop_facts(d), loop_words.loop_fixes(d))]
