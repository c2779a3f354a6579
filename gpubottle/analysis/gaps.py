"""What the main thread does outside the steps, from its stack samples: the work a run's long gaps
between the steps (and its time after the last one) are spent on, named for the account
(analysis/account.py), how regular the gaps are, and how much of the steps' own samples the
same work has: rules/phases/pauses.py tells a gap of the loop's own schedule from steps stretched
by other programs with them."""

from __future__ import annotations

import linecache
import re
import statistics
from collections import Counter

from gpubottle.analysis.loop_time import named_time
from gpubottle.analysis.phases import Span
from gpubottle.analysis.row_loops import RowLoop, row_loop
from gpubottle.analysis.stack_shares import innermost_user, is_comprehension
from gpubottle.analysis.stacks import ThreadSamples, phase_of
from gpubottle.analysis.startup_parts import timed_stacks
from gpubottle.analysis.work_kinds import REFINES, function_and_kind, refined, work_kind
from gpubottle.probes.sites import place

Named = tuple[str | None, str | None, str | None, int]


def spent_on(main: ThreadSamples | None, spans: list[Span]) -> Named:
    """What the main thread's samples inside `spans` are in: the user's function and its line, or
    the library work most of them are (a recompile, the profiler's events), with the user's line
    that led into it; the loop's line that called that function, where one did; and how many
    samples that rests on."""
    inside = [st for t, st in timed_stacks(main) if any(a <= t <= b for a, b in spans)]
    if not inside:
        return None, None, None, 0
    named = named_time(inside, loop=main.stacks if main is not None else None, only_other=False)
    what = named[0].function if named else None
    where = named[0].location if named else None
    called = named[0].called_at if named else None
    kinded = [(work_kind(st), st) for st in inside]
    kinds = refined(Counter(k for k, _ in kinded))
    kind, n = max(((k, c) for k, c in kinds.items() if k is not None), key=lambda kc: kc[1],
                  default=(None, 0))
    if kind is not None and 2 * n >= len(inside):  # the library work it is (a recompile)
        what = kind if what is None else f"{what}: {kind}"
        lines = Counter(place(u.file, u.line) for k, st in kinded if k in (kind, REFINES.get(kind))
                        for u in [innermost_user(st)] if u is not None)
        where = where or (lines.most_common(1)[0][0] if lines else None)
    if what is None or is_comprehension(what):
        # A comprehension at the script's top level, or the loop's own statement into library
        # code (an evaluation inlined under no_grad): named by its statement, as the loop's are.
        # (not the DataLoader's: workers starting at an epoch's iter() are the input's to say)
        at = Counter((u.file, u.line) for st in inside if phase_of(st) != "data"
                     for u in [innermost_user(st)] if u is not None)
        if at:
            (file, line), n = at.most_common(1)[0]
            text = linecache.getline(file, line).strip()
            if text and 2 * n >= len(inside):  # (most of them: else it names nothing)
                what, where, called = text[:120], place(file, line), None
    return what, where, called, len(inside)


def gaps_row_loop(main: ThreadSamples | None, spans: list[Span], what: str | None) -> RowLoop | None:
    """The Python loop over a tensor's rows, one at a time, that most of the samples inside `spans`
    are in, in the function `what` names (not where they name a library's work: `what` then says
    it after the function)."""
    if not what or ": " in what:
        return None
    # (a statement of the script's top level, named by its text, is looked for at the innermost
    # frame of the script's: `pred = model(Xt[i:i + 1]).argmax(1)` after the last step)
    function = what if _NAME.fullmatch(what) else None
    return row_loop([st for t, st in timed_stacks(main) if any(a <= t <= b for a, b in spans)], function)


_NAME = re.compile(r"[\w.<>]+")  # a function as py-spy names it, not a statement's text


# Gaps at steps this regular (the spread of the steps between them against their mean) come from
# the loop's own schedule (each epoch's start, every N steps), not from the machine's preemptions.
REGULAR_CV = 0.3
# A gap this short against the gaps' median is the machine's, not the schedule's (regular_every).
STRAY_SHARE = 0.25
# ...and the rest, one gap left out, must be this regular: leaving one out of five random gaps
# finds a spread under REGULAR_CV often enough (100, 200, 272, 310, 400, 500: 0.29).
ONE_OUT_CV = 0.1


def regular_every(pauses: list[int], excess: list[float] | None = None) -> float | None:
    """The steps between the gaps where they come at a regular step (two: the second twice as far
    from the loop's start as the first), else None. A schedule's gaps with one step among them
    that something else stretched (a full garbage collection a run meets once, a preemption) still
    read as the schedule: from four gaps, one may be left out; and with each gap's time past the
    usual step (`excess`), gaps under STRAY_SHARE of their median are left out first."""
    if excess is not None and len(excess) == len(pauses) and len(pauses) > 2:
        floor = STRAY_SHARE * statistics.median(excess)
        pauses = [i for i, x in zip(pauses, excess) if x >= floor]
    idx = sorted(pauses)
    every = _every(idx)
    if every is None and len(idx) >= 4:
        for k in range(len(idx)):
            every = _every(idx[:k] + idx[k + 1:], ONE_OUT_CV)
            if every is not None:
                break
    return every


def _every(idx: list[int], cv: float = REGULAR_CV) -> float | None:
    if len(idx) < 2:
        return None
    gaps = [b - a for a, b in zip(idx, idx[1:])]
    if len(gaps) == 1:
        gaps.append(idx[0] + 1)  # (its first step's index is its steps from the start)
    mean = statistics.fmean(gaps)
    if mean < 2 or statistics.pstdev(gaps) > cv * mean:
        return None  # (long steps one after the other are the steps' own pace, not gaps)
    return round(statistics.fmean(b - a for a, b in zip(idx, idx[1:])), 2)


def in_steps_share(main: ThreadSamples, steps: ThreadSamples | None, what: str | None) -> float | None:
    """The share of the steps' own samples (`steps`) in the work the gaps were named by (`what`: a
    function, a kind, or "function: kind")."""
    if what is None or steps is None or not steps.stacks:
        return None
    function, kind = function_and_kind(what)
    if kind:
        hits = sum(1 for st in steps.stacks if work_kind(st) == kind)
        return round(hits / len(steps.stacks), 4)
    named = named_time(steps.stacks, loop=main.stacks, only_other=False, limit=50)
    return round(sum(x.share for x in named if x.function == function), 4)
