"""The names a fix for a network's output fed undetached into another's loss needs, read from the
script's source (analysis/zero_grads.grads_for_another found the cleared gradients): the optimizer
and the network it was built for (`opt_g = torch.optim.Adam(G.parameters(), ...)`), the loss the
backward takes (`d_loss = ...` above `d_loss.backward()`), and what of that network's output the
loss reads (`fake = G(z)` above it: `fake`). Anything not found is None and the fix says it in
general terms."""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass

from gpubottle.analysis.loop_source import split_site
from gpubottle.evidence import GradsForAnother

_OPTIMIZER = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*=.*?([A-Za-z_][\w.]*)\.parameters\(")
_BACKWARD = re.compile(r"([A-Za-z_]\w*)\.backward\(")
REACH = 40  # lines looked back for the loss's and the output's assignments


@dataclass
class Undetached:
    optimizer: str | None = None  # opt_g
    network: str | None = None  # G
    loss_site: str | None = None  # file:line of `d_loss = ...`
    output: str | None = None  # fake: the network's output, read by that line
    retains: bool = False  # the backward keeps its graph (retain_graph=True)


def _assigned_above(path: str, line: int, pattern: re.Pattern[str]) -> int | None:
    for n in range(line - 1, max(0, line - REACH), -1):
        if pattern.match(linecache.getline(path, n)):
            return n
    return None


def undetached(a: GradsForAnother, cwd: str | None) -> Undetached:
    """The names, read from the sources of `a`'s sites (relative to the run's folder `cwd`)."""
    out = Undetached()
    built = split_site(a.optimizer_site, cwd)
    if built is not None and (m := _OPTIMIZER.match(linecache.getline(*built))):
        out.optimizer, out.network = m.group(1), m.group(2)
    back = split_site(a.backward_site, cwd)
    if back is None:
        return out
    text = linecache.getline(*back)
    out.retains = "retain_graph=True" in text
    loss = _BACKWARD.search(text)
    if loss is None:
        return out
    path, line = back
    at = _assigned_above(path, line, re.compile(rf"^\s*{re.escape(loss.group(1))}\s*="))
    if at is None:
        return out
    out.loss_site = f"{(a.backward_site or '').rpartition(':')[0]}:{at}"  # (as the site says its file)
    if out.network is not None:
        made = _assigned_above(path, at, re.compile(rf"^\s*([A-Za-z_]\w*)\s*=\s*{re.escape(out.network)}\("))
        if made is not None:
            name = linecache.getline(path, made).split("=", 1)[0].strip()
            if re.search(rf"\b{re.escape(name)}\b(?!\.detach)", linecache.getline(path, at)):
                out.output = name
    return out
