"""Training steps taken with the model left in eval mode: an evaluation that calls model.eval() and
never model.train() after it (evaluate() called at the end of each epoch, train() once before the
loop) leaves every later epoch training with dropout off and batch norm normalising by its running
statistics, which it then never updates: not the training the script sets up, and nothing in its
speed shows it.

An eval() counts where the module holds such layers and an optimizer of the script's updates its
parameters (probes/modes.py reads both): an EMA copy or a frozen teacher put in eval mode for good
is not trained, nor a batch norm layer put in eval mode by itself (fine-tuning's frozen
statistics), nor a module whose first forward after the eval() records autograd (a part frozen
while the rest trains around it: an evaluation runs under no_grad). From it, the optimizer steps
until the next train() of any module (or the run's end) are counted; an eval() while one is
already open adds nothing.
"""

from __future__ import annotations

import bisect
from collections import Counter

from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import EvalModeTraining


def eval_mode_training(ev: ChildEvents) -> EvalModeTraining | None:
    steps = sorted(float(s.t) for s in ev.opt_steps)
    if not steps:
        return None
    forwards = sorted((float(f.t), int(f.grad)) for f in ev.eval_forwards)

    def trains_through(t: float) -> bool:
        """The first forward after `t` recorded autograd: the module trains in eval mode on purpose."""
        i = bisect.bisect_right(forwards, (t, 2))
        return i < len(forwards) and forwards[i][1] == 1

    counts: Counter[tuple[str | None, str | None, str | None]] = Counter()
    opened: tuple[float, tuple[str | None, str | None, str | None]] | None = None
    for m in [*sorted(ev.modes, key=lambda m: float(m.t)), None]:
        t = float(m.t) if m is not None else float("inf")
        if opened is not None and (m is None or int(m.training)):
            lo, hi = bisect.bisect_right(steps, opened[0]), bisect.bisect_left(steps, t)
            counts[opened[1]] += hi - lo
            opened = None
        if m is not None and opened is None and not int(m.training) and m.moded and m.trained \
                and not trains_through(t):
            opened = (t, (m.site, m.function, m.called_at))
    total = sum(counts.values())
    if total == 0:
        return None
    (site, function, called_at), _ = counts.most_common(1)[0]
    return EvalModeTraining(steps=total, of_steps=len(steps), site=site, function=function,
                            called_at=called_at)
