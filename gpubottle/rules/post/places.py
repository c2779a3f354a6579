"""A fix's place is the user's code, never a file inside an installed library or the standard
library (DESIGN: a fix's "where"). The probes record user frames; this holds for evidence saved
before they did, and for any place a rule takes from a library's object."""

from __future__ import annotations

import dataclasses

from gpubottle.evidence import Evidence
from gpubottle.report import Finding, Fix

# What a path inside an installed package or the interpreter's own library looks like, however
# it was shortened: a virtual environment in the working folder gives ".venv/lib/python3.11/...".
_LIBRARY = ("site-packages/", "dist-packages/", "/lib/python3", "lib/python3.", "<frozen ", "<string>",
            "/torchinductor_")


def in_library(where: str | None) -> bool:
    return where is not None and any(part in where for part in _LIBRARY)


def _placed(fix: Fix, ev: Evidence) -> Fix:
    if not in_library(fix.where):
        return fix
    # The user's line that reached the library: the DataLoader built over that dataset, else none.
    loader = next((lo.site for lo in ev.loaders if lo.dataset_getitem == fix.where), None)
    return dataclasses.replace(fix, where=loader if not in_library(loader) else None)


def in_user_code(findings: list[Finding], ev: Evidence) -> list[Finding]:
    return [dataclasses.replace(f, fixes=[_placed(x, ev) for x in f.fixes]) for f in findings]
