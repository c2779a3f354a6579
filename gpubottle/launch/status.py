"""What the live status line says: steps/s, input-wait share, CPU and memory, from data already
collected (the probes' event file and the sampler's latest values)."""

from __future__ import annotations

import time
from typing import Any

from gpubottle.collect.events import ChildEvents


def _step_times(ev: ChildEvents) -> list[float]:
    if ev.opt_steps:
        first = ev.opt_steps[0][0]
        return [float(t) for oid, t in ev.opt_steps if oid == first]
    if ev.backwards:
        return [float(t1) for _, t1 in ev.backwards]
    return [float(b[1]) for b in ev.batches if not b[4]]


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit in ("B", "KB") else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def status_line(ev: ChildEvents, latest: dict[str, Any], main_pid: int, started: float) -> str:
    now = time.monotonic()
    elapsed = now - started
    parts = [f"gpubottle {int(elapsed // 60):02d}:{int(elapsed % 60):02d}"]
    steps = _step_times(ev)
    parts.append(f"step {len(steps)}")
    recent = [t for t in steps if t >= now - 5.0]
    if len(recent) >= 2:
        rate = (len(recent) - 1) / max(1e-9, recent[-1] - recent[0])
        parts.append(f"{rate:.1f} steps/s")
    window = 5.0
    waited = sum(
        max(0.0, min(float(b[2]), now) - max(float(b[1]), now - window))
        for b in ev.batches[-2000:]
        if float(b[2]) >= now - window
    )
    if ev.batches:
        parts.append(f"input wait {min(1.0, waited / window):.0%}")
    cpu = latest.get("cpu") or {}
    if cpu:
        main = cpu.get(str(main_pid), 0.0)
        others = sum(v for k, v in cpu.items() if k != str(main_pid))
        parts.append(f"CPU main {main:.0%} children {others:.0%}")
    mem = latest.get("mem")
    if mem:
        tree = sum(v[0] for v in mem[2].values())
        parts.append(f"mem {_fmt_bytes(tree)}")
    return " | ".join(parts)
