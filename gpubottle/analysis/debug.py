"""Which debugging switches were on while the steps ran, and for how much of them: the probes record
each switch turned on or off with its time and the user's line (probes/debug_switches.py)."""

from __future__ import annotations

from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import DebugSetting


def debug_settings(ev: ChildEvents, t0: float | None, t1: float | None) -> list[DebugSetting]:
    """Each switch on for some of [t0, t1] (the measured steps; None: from its first record to the
    run's last), with the line that last turned it on."""
    out = []
    names = sorted({s.name for s in ev.debug_switches})
    for name in names:
        events = sorted((s for s in ev.debug_switches if s.name == name), key=lambda s: float(s.t))
        lo = t0 if t0 is not None else float(events[0].t)
        hi = t1 if t1 is not None else max(float(ev.end.t) if ev.end is not None else lo, lo)
        if hi <= lo:
            continue
        on_s, since, site = 0.0, None, None
        for s in events:
            if s.on and since is None:
                since, site = float(s.t), s.site
            elif not s.on and since is not None:
                on_s += max(0.0, min(float(s.t), hi) - max(since, lo))
                since = None
        if since is not None:
            on_s += max(0.0, hi - max(since, lo))
        if on_s > 0:
            out.append(DebugSetting(name, site, round(min(1.0, on_s / (hi - lo)), 4)))
    return out
