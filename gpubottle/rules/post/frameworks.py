"""Fixes in the words of the framework that built the DataLoader.

When a library builds the loader (the Hugging Face Trainer builds it from TrainingArguments), the user
cannot pass `num_workers=` anywhere: the knob is the library's own argument. The rules speak of
DataLoader arguments; this turns those changes into the library's names, after the rules ran.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpubottle.evidence import Evidence
from gpubottle.report import Finding, Fix
from gpubottle.rules.common import main_loader


@dataclass(frozen=True)
class Framework:
    prefix: str  # module prefix of the function that built the loader
    holder: str  # where the user sets the knobs
    knobs: dict[str, str]  # DataLoader argument -> the framework's argument


FRAMEWORKS = (
    Framework("transformers.", "TrainingArguments", {
        "num_workers": "dataloader_num_workers",
        "pin_memory": "dataloader_pin_memory",
        "persistent_workers": "dataloader_persistent_workers",
        "prefetch_factor": "dataloader_prefetch_factor",
        "batch_size": "per_device_train_batch_size",
    }),
)


def framework_of(ev: Evidence) -> Framework | None:
    lo = main_loader(ev)
    if lo is None or not lo.built_by:
        return None
    return next((f for f in FRAMEWORKS if lo.built_by.startswith(f.prefix)), None)


def _adapt(fix: Fix, fw: Framework) -> Fix:
    names = {k: fw.knobs[k] for k in fix.change if k in fw.knobs}
    if not names:
        return fix
    change = {names.get(k, k): v for k, v in fix.change.items()}
    args = ", ".join(f"{names[k]}={v[1]!r}" for k, v in fix.change.items() if k in names)
    text = f"{fix.text} (the DataLoader is built by the library: set {fw.holder}({args}))"
    # Every other field kept (the run's wall time a fix promises too).
    return dataclasses.replace(fix, text=text, change=change)


def in_framework_terms(findings: list[Finding], ev: Evidence) -> list[Finding]:
    fw = framework_of(ev)
    if fw is None:
        return findings
    return [dataclasses.replace(f, fixes=[_adapt(x, fw) for x in f.fixes]) for f in findings]
