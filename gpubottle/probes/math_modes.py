"""The faster-math settings the script already uses, so that no fix offers them again: autocast
(the first autocast of each device and dtype, at the user's line), torch.compile (each call) and
torch.set_flush_denormal (each call).

autocast's __init__ is wrapped, not its class: torch.compile's tracer knows the class and builds
the context itself, so a compiled region never runs the wrapper (no record there, and nothing of
the region changes). After the first record of a device and dtype each construction costs a set
lookup."""

from __future__ import annotations

import functools
import time
from typing import Any

from gpubottle.probes.recorder import Recorder
from gpubottle.probes.sites import caller_site
from gpubottle.vocabulary import MATH_AUTOCAST as AUTOCAST
from gpubottle.vocabulary import MATH_COMPILE as COMPILE
from gpubottle.vocabulary import MATH_FLUSH_DENORMAL as FLUSH_DENORMAL
from gpubottle.wire import MathMode


def install_math_modes(recorder: Recorder, torch: Any, status: dict[str, Any]) -> None:
    problems = []
    try:
        _wrap_autocast(recorder, torch.amp.autocast_mode.autocast)
    except Exception as exc:
        problems.append(f"autocast: {exc!r}")
    try:
        _wrap_compile(recorder, torch)
    except Exception as exc:
        problems.append(f"torch.compile: {exc!r}")
    try:
        _wrap_flush_denormal(recorder, torch)
    except Exception as exc:
        problems.append(f"torch.set_flush_denormal: {exc!r}")
    status["math-modes"] = "; ".join(problems)[:300] or None


def _wrap_autocast(recorder: Recorder, cls: Any) -> None:
    orig = cls.__init__
    if getattr(orig, "_gpubottle", False):
        return
    seen: set[tuple[str, str]] = set()

    @functools.wraps(orig)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        orig(self, *args, **kwargs)
        try:
            if getattr(self, "_enabled", False) and recorder.active:
                key = (str(self.device), str(self.fast_dtype).replace("torch.", ""))
                if key not in seen:
                    seen.add(key)
                    recorder.emit(MathMode(AUTOCAST, " ".join(key), time.monotonic(), caller_site()))
        except Exception:
            pass

    __init__._gpubottle = True  # type: ignore[attr-defined]
    cls.__init__ = __init__


def _wrap_compile(recorder: Recorder, torch: Any) -> None:
    orig = torch.compile
    if getattr(orig, "_gpubottle", False):
        return

    @functools.wraps(orig)
    def compile(*args: Any, **kwargs: Any) -> Any:
        try:
            if recorder.active:
                mode = str(kwargs.get("mode") or "")
                recorder.emit(MathMode(COMPILE, mode, time.monotonic(), caller_site()))
        except Exception:
            pass
        return orig(*args, **kwargs)

    compile._gpubottle = True  # type: ignore[attr-defined]
    torch.compile = compile


def _wrap_flush_denormal(recorder: Recorder, torch: Any) -> None:
    """torch has no getter for the mode: the script's own calls are what tells it (subnormal-math
    offers nothing where the script flushes already). Detail: "on" or "off", "unsupported" where
    this CPU has no such mode (torch returns False)."""
    orig = getattr(torch, "set_flush_denormal", None)
    if orig is None or getattr(orig, "_gpubottle", False):
        return

    @functools.wraps(orig)
    def set_flush_denormal(mode: Any) -> Any:
        result = orig(mode)
        try:
            if recorder.active:
                detail = ("on" if mode else "off") if result else "unsupported"
                recorder.emit(MathMode(FLUSH_DENORMAL, detail, time.monotonic(), caller_site()))
        except Exception:
            pass
        return result

    set_flush_denormal._gpubottle = True  # type: ignore[attr-defined]
    torch.set_flush_denormal = set_flush_denormal
