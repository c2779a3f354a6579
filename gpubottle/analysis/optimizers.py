"""The optimizers the script built, by the line that built them: a line that built one again and
again while the steps ran (`opt = torch.optim.Adam(...)` inside the loop) is a loop whose optimizer
starts over at every step."""

from __future__ import annotations

from collections import Counter

from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import OptimizerRebuilt


def rebuilt_optimizer(ev: ChildEvents, steps: int) -> OptimizerRebuilt | None:
    """The line that built the most optimizers, when it built more than one (None otherwise)."""
    sites = Counter(b.site for b in ev.optimizers)
    if not sites:
        return None
    site, builds = sites.most_common(1)[0]
    if builds < 2:
        return None
    cls = next((b.cls for b in ev.optimizers if b.site == site), None)
    return OptimizerRebuilt(cls, site, builds, steps)
