"""Gate settings from the command line and `[tool.gpubottle.gate]` in pyproject.toml."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from gpubottle.errors import EXIT_USAGE, GpubottleError
from gpubottle.gate.budgets import GateConfig
from gpubottle.vocabulary import FINDINGS

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 10**3, "kib": 1 << 10, "m": 1 << 20, "mb": 10**6,
          "mib": 1 << 20, "g": 1 << 30, "gb": 10**9, "gib": 1 << 30, "t": 1 << 40, "tb": 10**12,
          "tib": 1 << 40}


def parse_fraction(value: Any, what: str) -> float:
    """0.1, "0.1", "10%" -> 0.1"""
    text = str(value).strip()
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise GpubottleError(f"{what}: {value!r} is not a number or percentage", EXIT_USAGE) from None


def parse_size(value: Any, what: str) -> int:
    """"20GiB", "512 MB", 1073741824 -> bytes"""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-zA-Z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise GpubottleError(f"{what}: {value!r} is not a size (e.g. 20GiB, 512MB)", EXIT_USAGE)
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def parse_forbid(value: Any) -> list[str]:
    items = value if isinstance(value, list) else str(value).split(",")
    cats = [str(c).strip() for c in items if str(c).strip()]
    unknown = [c for c in cats if c not in FINDINGS]
    if unknown:
        raise GpubottleError(
            f"--forbid: unknown finding {', '.join(unknown)} (known: {', '.join(FINDINGS)})",
            EXIT_USAGE,
        )
    return cats


def read_pyproject(path: str | None) -> dict[str, Any]:
    """The [tool.gpubottle.gate] table, or {} when there is none."""
    explicit = path is not None
    path = path or "pyproject.toml"
    if not os.path.isfile(path):
        if explicit:
            raise GpubottleError(f"no such config file: {path}", EXIT_USAGE)
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - older Pythons
        try:
            import tomli as tomllib
        except ImportError:
            print("gpubottle: note: reading pyproject.toml needs Python 3.11+ or tomli; ignored",
                  file=sys.stderr)
            return {}
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, ValueError) as exc:
        raise GpubottleError(f"cannot read {path}: {exc}", EXIT_USAGE) from exc
    table = data.get("tool", {}).get("gpubottle", {}).get("gate", {})
    return table if isinstance(table, dict) else {}


def build_config(table: dict[str, Any], max_regression: str | None, forbid: str | None,
                 min_gpu_busy: str | None, max_peak_memory: str | None) -> GateConfig:
    """Command-line values win over pyproject's; unset everywhere means the default."""
    cfg = GateConfig()
    reg = max_regression if max_regression is not None else table.get("max_regression")
    if reg is not None:
        cfg.max_regression = None if str(reg).lower() in ("off", "none") else parse_fraction(
            reg, "max_regression")
    fb = forbid if forbid is not None else table.get("forbid")
    if fb is not None:
        cfg.forbid = parse_forbid(fb)
    busy = min_gpu_busy if min_gpu_busy is not None else table.get("min_gpu_busy")
    if busy is not None:
        cfg.min_gpu_busy = parse_fraction(busy, "min_gpu_busy")
    mem = max_peak_memory if max_peak_memory is not None else table.get("max_peak_memory")
    if mem is not None:
        cfg.max_peak_memory = parse_size(mem, "max_peak_memory")
    return cfg
