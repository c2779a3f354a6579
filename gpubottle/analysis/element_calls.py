"""A user function that Python calls once for every value of a tensor or array: Tensor.apply_ (or
map_, map2_), C calling back with no Python frame between the user's line and the function, or
np.vectorize, numpy's frames between them. Its samples are in the function's own Python (max,
min, arithmetic on one float), which read as "clip_and_scale takes 100% of making batches: make it
cheaper first" (a line, not a cause); the cause is the per-value call (work_kinds.ELEMENT_CALLS:
its measurement and remedy)."""

from __future__ import annotations

import linecache
import re

from gpubottle.analysis.stacks import Frame
from gpubottle.analysis.work_kinds import ELEMENT_CALLS
from gpubottle.probes.sites import is_user_file

_PER_VALUE = re.compile(r"\.(apply_|map_|map2_)\s*\(")


def element_call_kind(st: list[Frame], i: int) -> str | None:
    """ELEMENT_CALLS where the user function st[i] was called once per value: from the user's line
    above it calling Tensor.apply_ / map_ (no frame between), or through np.vectorize."""
    j = next((k for k in range(i - 1, -1, -1) if is_user_file(st[k].file)), -1)
    if j < 0:
        return None
    between = st[j + 1:i]
    if any(f.name.startswith("vectorize.") and "/numpy/" in f.file.replace("\\", "/") for f in between):
        return ELEMENT_CALLS
    if not between and _PER_VALUE.search(linecache.getline(st[j].file, st[j].line)):
        return ELEMENT_CALLS
    return None
