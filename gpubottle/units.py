"""How numbers and names are written for people, in one place: every report, gate message, table
and chart speaks with these (a share is "41%" everywhere, a duration "118.7 ms" everywhere)."""

from __future__ import annotations


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 else f"{x:.1%}"


def pct_or_dash(x: float | None) -> str:
    """A share in a table cell: "-" where nothing was measured (never "0%")."""
    return pct(x) if x is not None else "-"


def gib(n: float) -> str:
    """A size in GiB or MiB, under a MiB in KiB or bytes (a small model's save: never "0 MiB")."""
    size = abs(n)
    if size >= (1 << 30):
        return f"{n / (1 << 30):.2f} GiB"
    if size >= (1 << 20) or size == 0:
        return f"{n / (1 << 20):.0f} MiB"
    return f"{n / (1 << 10):.0f} KiB" if size >= 512 else f"{n:.0f} bytes"


def cores(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x < 10 else f"{x:.0f}"


def n_cores(x: float) -> str:
    """A core count with its noun: 1 core, 1.5 cores, 2 cores."""
    n = cores(x)
    return f"{n} core" if n == "1" else f"{n} cores"


def duration(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def seconds(s: float) -> str:
    """A span of a run's wall time: "0.42 s", "9.6 s", "12 min"."""
    if s < 1:
        return f"{s:.2f} s"
    if s < 120:
        return f"{s:.1f} s"
    return duration(s)


def device_label(index: int, mig: int | None = None) -> str:
    """How a GPU is named in reports: "GPU 0", or "GPU 0 MIG 1" for a MIG instance."""
    return f"GPU {index}" + (f" MIG {mig}" if mig is not None else "")
