"""The loop waits for batches: data-starved or preprocessing-bound, and why.

Three causes, told apart by measurement:
- workers starting again every epoch (a rebuilt loader, or workers that do not persist): the
  first batch of each epoch waits for them;
- loading that more parallelism would hide: a loader that mostly waits (I/O, a remote store), or
  one that computes while the run leaves CPU unused; the worker plan predicts the gain;
- per-sample work the CPU the run has cannot keep up with: it must get cheaper.

What is decided lives in `input_decision`, what is said in `input_words`: this module builds the
finding and orders its fixes.
"""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, LoaderInfo, Measured
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import input_words as words
from gpubottle.rules import loop_input_words as loop_words
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import enough_steps, main_loader
from gpubottle.rules.gpu_words import breakdown_fact
from gpubottle.rules.input_decision import Steady, decide_steady
from gpubottle.rules.input_fixes import (
    cheaper_fixes,
    hot_fix,
    io_fix,
    prefetch_fix,
    receive_fix,
    restart_fix,
    worker_fix,
)
from gpubottle.rules.loop_input import decide_generator_loop


def _start_up_s(ev: Evidence) -> float:
    """Mean seconds per measured step spent waiting for workers to start again."""
    st = ev.steps
    idx = st.measured_indices()
    if not st.start_up_wait_s or not idx:
        return 0.0
    return sum(st.start_up_wait_s[i] for i in idx) / len(idx)


def input_pipeline(ev: Evidence) -> list[Finding]:
    w = ev.measured()
    lo = main_loader(ev)
    if w is None or not enough_steps(ev, w):
        return []
    if lo is None:
        return generator_loop(ev, w)
    share = w.wait_share
    if share < th.INPUT_WAIT_INFO or w.mean_wait_s < th.INPUT_WAIT_FLOOR_S:
        return []
    start_up = min(_start_up_s(ev), w.mean_wait_s)
    steady = w.mean_wait_s - start_up  # waiting for batches once the workers run
    facts = [words.wait_fact(w), words.loader_fact(lo)]
    if ev.gpu is not None and ev.gpu.breakdown:
        facts.append(breakdown_fact(ev.gpu))
    restart = None
    start_share = start_up / w.mean_step_s
    if start_up >= th.INPUT_WAIT_FLOOR_S and start_share >= th.INPUT_WAIT_INFO:
        epochs = max(1, lo.iterators - 1)
        facts.append(words.restart_fact(lo, start_share, epochs))
        restart = restart_fix(lo, w, start_up, epochs)
    if not (steady >= th.INPUT_WAIT_FLOOR_S and steady / w.mean_step_s >= th.INPUT_WAIT_INFO):
        return [Finding(v.DATA_STARVED, th.severity_for_share(share), round(share, 4),
                        words.restart_summary(ev, share, start_share), facts,
                        [restart] if restart is not None else [])]
    d = decide_steady(ev, w, lo, steady, start_up)
    facts += words.steady_facts(ev, d, lo.num_workers or 0)
    fixes, more_facts = _steady_fixes(ev, w, lo, d, share, restart)
    facts += more_facts
    if restart is not None and start_up >= steady:
        # Most of the wait is workers starting: that is the verdict, the steady wait comes after.
        return [Finding(v.DATA_STARVED, th.severity_for_share(share), round(share, 4),
                        words.restart_summary(ev, share, start_share), facts, fixes)]
    return [Finding(d.category, th.severity_for_share(share), round(share, 4),
                    words.steady_summary(ev, share, d, lo), facts, fixes,
                    None if d.measured_cpu else words.unmeasured_question(d.category))]


def _steady_fixes(ev: Evidence, w: Measured, lo: LoaderInfo, d: Steady, share: float,
                  restart: Fix | None) -> tuple[list[Fix], list[Fact]]:
    """The fixes for the steady wait, in the order they are worth trying, and any fact they rest on."""
    nw = lo.num_workers or 0
    plan, facts = d.plan, []
    fixes: list[Fix] = []
    first_restart = restart is not None and d.start_up_s >= d.wait_s
    if first_restart and restart is not None:
        fixes.append(restart)
    if d.category == v.DATA_STARVED:
        if lo.num_workers is None:  # a trace shows a multi-process loader, not its worker count
            fixes.append(Fix(text=words.UNKNOWN_WORKERS_FIX))
        elif plan is not None and plan.workers > nw and d.speedup >= 1 + th.MIN_FIX_GAIN:
            fixes.append(worker_fix(ev, w, lo, plan, d.io_bound, d.start_up_s, share))
        elif d.io_bound and (pf := prefetch_fix(lo)) is not None:
            fixes.append(pf)
    fixes += [f for f in (receive_fix(ev, w, lo, d.wait_s, d.saturated), hot_fix(ev, lo)) if f is not None]
    if d.category == v.DATA_STARVED and d.io_bound:
        fixes.append(io_fix(lo))
    if d.category == v.PREPROCESSING_BOUND:
        more, fact = cheaper_fixes(ev, w, lo, d.wait_s)
        if fact is not None:
            facts.append(Fact(fact))
        fixes += more
        if plan is not None and plan.workers > nw and not d.starved_of_cpu and (
                d.speedup >= th.TRY_WORKER_SPEEDUP):
            fixes.append(Fix(text=words.try_workers_text(plan.workers, d.speedup),
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
