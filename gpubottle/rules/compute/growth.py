"""Steps that take longer as the run goes: the loop's own code does work in proportion to what the
run has done (analysis/growth.py), so the run costs the square of its length. Named whatever the
verdict, at the line whose time grows, with the run's time at the steps' first pace. Growth that no
line of the loop's own code explains (the model's inputs growing, a curriculum) is said as a fact,
without a fix."""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.analysis.growth import HISTORY, LIST_FRONT, REWRITE, SELF_CONCAT
from gpubottle.analysis.work_kinds import LIST_FRONT_FIX
from gpubottle.evidence import Evidence, StepGrowth
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import run_expected
from gpubottle.rules.compute.subnormal import decide_subnormal
from gpubottle.units import ms, pct


@dataclass
class Growing:
    growth: StepGrowth
    share: float  # of the steps' time, the growth's
    named: bool  # a line of the loop's own code is named as its cause


def decide_growth(ev: Evidence) -> Growing | None:
    g = ev.step_growth
    if g is None or g.training_s <= 0:
        return None
    share = g.extra_s / g.training_s
    if (g.rho < th.STEP_GROWTH_RHO or g.last_s < th.STEP_GROWTH_RATIO * g.first_s
            or share < th.STEP_GROWTH_MIN_SHARE):
        return None
    if g.cpu_ratio is not None and g.cpu_ratio < 1 + (g.last_s / g.first_s - 1) / 2:
        return None  # the steps waited longer for a core, they did not work longer
    least = th.STEP_GROWTH_KNOWN_LINE_SHARE if g.kind else th.STEP_GROWTH_LINE_SHARE
    named = g.location is not None and (g.line_share or 0.0) >= least
    outside = ev.cpu.outside_cores if ev.cpu is not None else None
    if not named and (outside or 0.0) >= th.OUTSIDE_CORES_WARNING:
        return None  # other programs took the cores: cpu-contention says so, with their names
    return Growing(g, share, named)


_REMEDY = {
    SELF_CONCAT: ("concatenates onto itself: each step copies everything gathered so far. Append "
                  "each step's tensor to a list and torch.cat the list once, after the loop (one "
                  "copy)"),
    HISTORY: ("goes over every value kept so far at each step: keep a running total (a sum and a "
              "count), or a fixed window (collections.deque(maxlen=100)) where a recent average is "
              "what is wanted"),
    # Measured here (json_history.py: a dict a step dumped whole with json.dump each step, 3,000
    # steps): 20.4 s; a line appended per step to a file kept open, ~2 s.
    REWRITE: ("writes out everything kept so far at each step, the whole file again: write only the "
              "new record each step (one JSON line appended to a file kept open, f.write(json.dumps("
              "record) + '\\n'), JSON Lines), or write the whole every few hundred steps and once at "
              "the end"),
    # (work_kinds.LIST_FRONT_FIX: the measurement behind it)
    LIST_FRONT: ("takes values off a list's front: each time, every value behind it moves down one "
                 "place, as many as the list has grown to. "
                 + LIST_FRONT_FIX[0].upper() + LIST_FRONT_FIX[1:]),
}


def _fix(d: Growing, run_s: float | None, fragmented: bool) -> Fix:
    g = d.growth
    # The fix removes the named line's part of the growth, not all of it: the rest (a larger buffer's
    # items scattered in memory, sampled at random) stays. replay_list.py on a faster host: the
    # whole growth predicted 1.47x of the run, the ring buffer measured 1.09-1.17x; pop(0)'s line
    # held 66% of the growth.
    part = g.line_share if d.named and g.line_share else 1.0
    removed = g.extra_s * min(1.0, part)
    new_run = run_s - removed if run_s and removed < run_s else None
    what = f"`{g.statement}` ({g.location})" if g.statement else f"{g.function} ({g.location})"
    remedy = _REMEDY.get(g.kind or "")
    more = (f"{what} does more work at each step than at the one before, in proportion to what "
            "the run has done (a tensor or list it adds to and then reads whole, a search through "
            "every earlier value): make its cost per step independent of the run's length (collect, "
            "and combine once at the end, or keep a running value); try it and time it")
    # A heap that fragments (the oom-risk finding) slows allocation itself: each step's tensors
    # go to fresh pages of an ever larger heap (measured: a DQN's steps 4.7 -> 8.8 ms with glibc,
    # a steady 3.9 with jemalloc, the same code).
    heap = (f"{what}: its time grows while malloc's heap fragments (the oom-risk finding), and "
            "the tensors it makes go to that ever larger heap, on pages never touched before: apply "
            "that finding's allocator fix first and time the steps; if they still slow, the line "
            "does more work each step in proportion to what the run has done: make its cost per "
            "step independent of the run's length")
    text = f"{what} {remedy}" if remedy else heap if fragmented else more
    expected = run_expected(run_s, new_run)
    pace = (", every step at the first steps' pace" if part >= 1.0 else
            f", the steps' growth less this line's part ({pct(part)})")
    return Fix(text=text, where=g.called_at or g.location,
               expected=(expected + pace) if expected else None,
               expected_run_s=round(new_run, 3) if new_run else None)


def _rise(per_step_s: float) -> str:
    """The trend's slope as a reader takes it in: a rise of 0.02 us a step over 12,000 steps read
    "each about 0.0 us longer"."""
    us = per_step_s * 1e6
    if us >= 0.1:
        return f"each about {us:.1f} us longer than the one before"
    return f"about {us * 1000:.1f} us longer every 1,000 steps"


def slowing_steps(ev: Evidence) -> list[Finding]:
    d = decide_growth(ev)
    if d is None:
        return []
    g = d.growth
    where = "its epoch" if g.by_epoch else "the run"
    facts = [Fact(f"steps take {ms(g.first_s)} early in {where} and {ms(g.last_s)} late in it: "
                  f"{_rise(g.per_step_s)} "
                  f"(a steady rise: rank correlation {g.rho:.2f})", "step_growth_per_step_s", g.per_step_s),
             Fact(f"the growth took {g.extra_s:.1f} s of the steps' {g.training_s:.1f} s "
                  f"({pct(d.share)})", "step_growth_share", round(d.share, 4))]
    run_s = ev.run.duration_s
    run_share = round(g.extra_s / run_s, 4) if run_s else None
    if not d.named:
        if decide_subnormal(ev) is not None:
            return []  # subnormal-math names the cause: values the CPU computes on slowly
        return [Finding(v.LOOP_OVERHEAD, "info", round(d.share, 4),
                        f"steps take longer as {where} goes ({ms(g.first_s)} -> {ms(g.last_s)})",
                        facts, open_question=(
                            "no line of the loop's own code explains the growth"
                            + (" (no stack samples: run without --no-stacks to name it)"
                               if ev.stacks is None else "")
                            + ": every part of the step slowed alike, as when other programs "
                            "take more of the cores or the CPU clocks down, or the model's own "
                            "work grows with its inputs (longer sequences as training goes)"),
                        run_share=run_share)]
    facts.append(Fact(f"{g.location} ({g.function}) takes {pct(g.line_share or 0.0)} of that growth "
                      "(stack samples, the first quarter of steps against the last)",
                      "step_growth_line_share", g.line_share))
    heap = g.kind is None and _fragmented(ev)
    summary = (f"steps take longer as {where} goes ({ms(g.first_s)} -> {ms(g.last_s)}): the loop "
               + (f"slows most at {g.location} while malloc's heap fragments" if heap else
                  f"does work at {g.location} in proportion to what it has done")
               + f", {pct(d.share)} of the steps' time")
    return [Finding(v.LOOP_OVERHEAD, th.severity_for_share(d.share), round(d.share, 4), summary, facts,
                    [_fix(d, run_s, heap)], run_share=run_share)]


def _fragmented(ev: Evidence) -> bool:
    from gpubottle.rules.memory.decide import decide_host_memory

    host = decide_host_memory(ev)
    return host is not None and host.fragmented is not None
