"""One value for each setting: where two findings change the same setting at the same line (the
training's and an evaluation's findings over the training's own DataLoader: num_workers 2 -> 11
for the steps, 2 -> 21 for the passes), the first finding in the report's order keeps its change
and the later one says that change applies to it too. Two values for one literal would leave the
user to choose (`--patch` already writes the first fix's value per setting and line) (pure)."""

from __future__ import annotations

import dataclasses

from gpubottle.evidence.account import CHECKPOINT, EVAL, STARTUP, TRAIN
from gpubottle.report import Finding, Fix

_FOR = {TRAIN: "the training steps", EVAL: "the evaluation", CHECKPOINT: "the checkpoints",
        STARTUP: "the start-up"}


def _label(fix: Fix) -> str:
    return ", ".join(f"{k}={v}" for k, v in fix.proposed().items())


def one_value_per_setting(findings: list[Finding]) -> list[Finding]:
    """`findings` in the report's order; a later finding's fix that changes a setting an earlier
    finding's fix already changes at the same place is replaced by a pointer to that fix."""
    kept: dict[tuple[str, str], tuple[Finding, Fix]] = {}
    out = []
    for f in findings:
        fixes: list[Fix] = []
        for fix in f.fixes:
            keys = [(fix.where, k) for k in fix.change] if fix.where else []
            first = next((kept[k] for k in keys if k in kept and kept[k][0] is not f), None)
            if first is None:
                for k in keys:
                    kept.setdefault(k, (f, fix))
                fixes.append(fix)
                continue
            owner, theirs = first
            whose = _FOR.get(owner.phase, owner.phase)
            pointer = Fix(text=(f"the fix to the same setting above ({_label(theirs)}, for "
                                f"{whose}) applies here too: one value for both"), where=fix.where)
            if not any(x.text == pointer.text for x in fixes):
                fixes.append(pointer)
        out.append(dataclasses.replace(f, fixes=fixes) if fixes != f.fixes else f)
    return out
