"""The optimizers the script built, by the line that built them: a line that built one again and
again while the steps ran (`opt = torch.optim.Adam(...)` inside the loop) is a loop whose optimizer
starts over at every step. And the training optimizer's step: its time and implementation; and the
looks at its tensors' values for subnormals (probes/subnormals.py)."""

from __future__ import annotations

import linecache
import statistics
from collections import Counter

from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import OptimizerRebuilt, OptimizerWork, StepEvidence, SubnormalLook
from gpubottle.probes.subnormals import BACKWARD_KIND
from gpubottle.wire import Subnormals


def rebuilt_optimizer(ev: ChildEvents, steps: int) -> OptimizerRebuilt | None:
    """The line that built the most optimizers, when it built more than one (None otherwise)."""
    sites = Counter(b.site for b in ev.optimizers)
    if not sites:
        return None
    site, builds = sites.most_common(1)[0]
    if builds < 2:
        return None
    cls = next((b.cls for b in ev.optimizers if b.site == site), None)
    same = sum(1 for b in ev.optimizers if b.site == site and b.same_params)
    return OptimizerRebuilt(cls, site, builds, steps, same)


def optimizer_work(ev: ChildEvents, steps: StepEvidence) -> OptimizerWork | None:
    """The main thread's optimizer steps in the measured window: the one that stepped most (the
    training's), how torch runs it, and the median time a training step spends in step() calls
    (a GAN's two optimizers each once a step: both). None without timed steps in the window."""
    lo, hi = steps.measured_from, steps.measured_to
    if lo is None or hi is None:
        return None
    mine = sorted((float(o.t0), float(o.t) - float(o.t0), o.opt) for o in ev.opt_steps
                  if o.t0 is not None and o.thread is None and lo <= float(o.t0) and float(o.t) <= hi)
    if not mine:
        return None
    counts = Counter(o for _, _, o in mine)
    main = counts.most_common(1)[0][0]
    # step() calls a training step: from the steps in the window, not from the optimizers' ids (a
    # loop that builds a new optimizer each step steps each once, and Python reuses their ids).
    idx = steps.measured_indices()
    # (over the steps whose step() calls were recorded: not those run without hooks)
    span = idx[-1] - idx[0] + 1 - sum(1 for i in steps.unhooked if idx[0] <= i <= idx[-1]) if idx else 0
    per_step = (round(len(mine) / span) if span > 0
                else sum(1 for n in counts.values() if 2 * n >= counts[main]))
    k = max(1, per_step)
    sums = [sum(d for _, d, _ in mine[i:i + k]) for i in range(0, len(mine) - k + 1, k)]
    step_s = statistics.median(sums) if sums else sum(d for _, d, _ in mine)
    built = {b.opt: b for b in ev.optimizers}  # the latest built under an id (ids are reused)
    b = built.get(main)
    if b is None:
        return OptimizerWork(None, None, None, None, False, step_s, k)
    return OptimizerWork(b.cls, b.site if builds_here(b.site, b.cls) else None, b.tensors, b.impl,
                         bool(b.can_fuse), step_s, k, b.groups)


def builds_here(site: str | None, cls: str | None) -> bool:
    """The user's line the probe recorded is where the optimizer is written (its class, or torch.optim
    reached some other way), not a framework's call that builds it inside (`trainer.train()`): a
    fix can change its arguments there. True where the line cannot be read."""
    if not site or ":" not in site:
        return False
    path, _, line = site.rpartition(":")
    text = linecache.getline(path, int(line)) if line.isdigit() else ""
    if not text.strip():
        return True
    name = (cls or "").rsplit(".", 1)[-1]
    return bool(name and name in text) or "optim" in text


def subnormal_look(r: Subnormals) -> SubnormalLook:
    """A look's totals and the kind of tensor with the largest subnormal share."""
    groups = [(str(k), int(n), int(sub)) for k, n, sub in r.groups if int(n) > 0]
    top = max(groups, key=lambda g: g[2] / g[1], default=None)
    weights = next((g for g in groups if g[0] == "parameters"), None)
    return SubnormalLook(float(r.t), int(r.step), sum(g[1] for g in groups), sum(g[2] for g in groups),
                         top[0] if top and top[2] else None, round(top[2] / top[1], 4) if top else 0.0,
                         round(weights[2] / weights[1], 6) if weights else 0.0,
                         float(r.penalty) if r.penalty is not None else None,
                         any(g[0] == BACKWARD_KIND for g in groups))
