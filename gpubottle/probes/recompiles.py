"""torch.compile's recompilations, read once as the script ends.

A compiled function is compiled again each time a guard its compiled code was built under fails:
most often an input of a shape not seen before (a batch of another sequence length: the first
new shape recompiles it for dynamic shapes, ~12 s of a 42-s run of a small encoder on 2 cores
here). Dynamo keeps the reasons itself (torch._dynamo.utils.guard_failures, code object ->
reason strings, whatever its logging settings), so nothing runs while the script does: at its end,
where dynamo was imported, each function compiled again is recorded with its place, how many
times, and the first reason. Fails open: another torch's layout records nothing."""

from __future__ import annotations

import re
import sys
import time
from typing import Any

from gpubottle.probes.hooks import NEVER, Wake
from gpubottle.probes.recorder import Recorder
from gpubottle.probes.sites import place
from gpubottle.wire import Recompiles

MAX_FUNCTIONS = 5
REASON_CHARS = 200


def recompiled(failures: Any) -> list[list[Any]]:
    """[name, place, times, first reason] for each code object in `failures` (code -> reasons),
    most recompiled first."""
    out: list[list[Any]] = []
    for code, reasons in list(failures.items()):
        if not reasons:
            continue
        name = getattr(code, "co_qualname", None) or getattr(code, "co_name", "?")
        where = place(code.co_filename, code.co_firstlineno) if hasattr(code, "co_filename") else None
        # (dynamo prefixes its frame and compile ids: "0/0: tensor 'ids' size mismatch ...")
        reason = re.sub(r"^\d+/\d+:\s*", "", str(reasons[0]))
        out.append([str(name), where, len(reasons), reason[:REASON_CHARS]])
    out.sort(key=lambda f: -f[2])
    return out[:MAX_FUNCTIONS]


class RecompileProbe:
    """A step probe that wants no step: its one look is at the script's end."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def reset(self, cfg: Any) -> None:
        pass

    def on_step(self, step: int) -> Wake:
        return NEVER

    def finish(self, exc: BaseException | None) -> None:
        utils = sys.modules.get("torch._dynamo.utils")
        failures = getattr(utils, "guard_failures", None)
        if not failures:
            return
        try:
            functions = recompiled(failures)
        except Exception:
            return
        if functions:
            self.recorder.emit(Recompiles(time.monotonic(), functions))
