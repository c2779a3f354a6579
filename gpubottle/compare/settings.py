"""The settings a saved run records, flattened for comparing two runs: the machine and torch, the
script and its command line, each DataLoader's arguments at its construction site, torch's thread
counts and the thread variables of the environment, and how often the loop evaluates and saves.

Two runs' DataLoaders are paired by their construction site; where an edit moved the line, by file,
dataset class and order, so a patch that adds a line above does not read as one loader removed and
another added.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from gpubottle.evidence.account import CHECKPOINT, EVAL
from gpubottle.evidence.host import LoaderInfo
from gpubottle.report import Report

# Groups, in the order a reader needs them: a different machine or torch changes everything.
MACHINE, SCRIPT, LOADER, THREADS, RHYTHM = "machine", "script", "loader", "threads", "rhythm"
ORDER = (MACHINE, SCRIPT, LOADER, THREADS, RHYTHM)
UNSET = None  # a setting one run has and the other lacks

# Recorded only for a loader with workers: a change of num_workers from or to 0 brings them.
_WITH_WORKERS = ("prefetch_factor", "start_method")
LOADER_FIELDS = ("num_workers", "batch_size", "pin_memory", "prefetch_factor", "persistent_workers",
                 "start_method", "drop_last", "sampler", "collate_fn", "dataset_class")


@dataclass(frozen=True)
class Setting:
    group: str
    name: str  # as a fix's change names it ("num_workers", "torch.set_num_threads", "--workers")
    value: Any
    where: str | None  # file:line, "command line", "environment", "machine"


@dataclass(frozen=True)
class Change:
    group: str
    setting: str
    before: Any
    after: Any
    where: str | None
    was: str | None = None  # a DataLoader's site before, where the edit moved its line


def _split_command(command: list[str], target: str | None) -> tuple[list[str], list[str]]:
    """gpubottle's own options (after `run`, before the script) and the script's arguments."""
    if not target:
        return [], []
    for i in range(len(command) - 1, -1, -1):
        if command[i] == target:
            start = command.index("run") + 1 if "run" in command[:i] else i
            own = command[start:i]
            return [a for a in own if a not in ("-m", "--module", "--")], command[i + 1:]
    return [], []


# gpubottle's options that name where its output goes: not a setting of the run.
_OUTPUTS = ("--out", "-o", "--json", "--html", "--patch", "--no-status")


def parse_args(args: list[str]) -> dict[str, Any]:
    """`--key value`, `--key=value`, `--flag`, `key=value` (Hydra, OmegaConf, nanoGPT's configurator)
    and positional arguments, by name."""
    out: dict[str, Any] = {}
    i, position = 0, 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and len(a) > 1 and not _number(a):
            if "=" in a:
                key, value = a.split("=", 1)
                out[key] = value
            elif i + 1 < len(args) and not (args[i + 1].startswith("-") and not _number(args[i + 1])):
                out[a] = args[i + 1]
                i += 1
            else:
                out[a] = True
        elif "=" in a and not a.startswith("="):
            key, value = a.split("=", 1)
            out[key] = value
        else:
            position += 1
            out[f"argument {position}"] = a
        i += 1
    return out


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _loaders(report: Report) -> list[LoaderInfo]:
    return sorted(report.evidence.loaders, key=lambda lo: lo.id)


def pair_loaders(before: Report, after: Report) -> list[tuple[LoaderInfo | None, LoaderInfo | None]]:
    """Each loader of one run with its counterpart in the other: same site first; then the same
    file and dataset class, in the order they were built."""
    a_left = list(_loaders(after))
    pairs: list[tuple[LoaderInfo | None, LoaderInfo | None]] = []
    unmatched: list[LoaderInfo] = []
    for lo in _loaders(before):
        same = next((x for x in a_left if lo.site and x.site == lo.site), None)
        if same is None:
            unmatched.append(lo)
            continue
        a_left.remove(same)
        pairs.append((lo, same))
    for lo in unmatched:
        same = next((x for x in a_left if _file(x.site) == _file(lo.site)
                     and x.dataset_class == lo.dataset_class and x.built_by == lo.built_by), None)
        if same is not None:
            a_left.remove(same)
        pairs.append((lo, same))
    pairs += [(None, x) for x in a_left]
    return pairs


def _file(site: str | None) -> str | None:
    return site.rsplit(":", 1)[0] if site else None


def machine_settings(report: Report) -> list[Setting]:
    ev = report.evidence
    run = ev.run
    out = [Setting(MACHINE, "torch", run.torch_version, "machine"),
           Setting(MACHINE, "python", run.python, "machine"),
           Setting(MACHINE, "platform", run.platform, "machine")]
    if ev.cpu is not None:
        out.append(Setting(MACHINE, "cores", ev.cpu.cores_logical, "machine"))
        avail = ev.cpu.cores_available
        out.append(Setting(MACHINE, "cores available", round(avail, 1) if avail else avail, "machine"))
    gpus = sorted(d.name or "GPU" for d in ev.nvml)
    if not gpus and ev.gpu is not None and ev.gpu.uses_gpu and ev.gpu.device_name:
        gpus = [ev.gpu.device_name]
    out.append(Setting(MACHINE, "GPUs", ", ".join(gpus) if gpus else "none", "machine"))
    return out


def script_settings(report: Report) -> list[Setting]:
    run = report.evidence.run
    if run.kind != "run":
        return [Setting(SCRIPT, "trace", ", ".join(run.trace.files) if run.trace else None, None)]
    out = [Setting(SCRIPT, "script", os.path.basename(run.target) if run.target else None, None)]
    own, args = _split_command(run.command, run.target)
    for key, value in parse_args(args).items():
        out.append(Setting(SCRIPT, key, value, "command line"))
    for key, value in parse_args(own).items():
        if key not in _OUTPUTS:  # --no-stacks, --profile-window...: they change what is measured
            out.append(Setting(SCRIPT, f"gpubottle run {key}", value, "gpubottle's options"))
    return out


def thread_settings(report: Report) -> list[Setting]:
    cpu = report.evidence.cpu
    if cpu is None:
        return []
    out = [Setting(THREADS, "torch.set_num_threads", cpu.torch_threads, cpu.threads_site),
           Setting(THREADS, "torch.set_num_interop_threads", cpu.torch_interop_threads, None)]
    out += [Setting(THREADS, name, value, "environment") for name, value in sorted(cpu.thread_env.items())]
    return out


def rhythm_settings(report: Report) -> list[Setting]:
    """How often the loop evaluates and saves, measured (the fixes' "save every (steps)")."""
    words = {CHECKPOINT: "save every (steps)", EVAL: "evaluate every (steps)"}
    out = []
    for e in report.evidence.account:
        if e.phase in words and e.every_steps:
            out.append(Setting(RHYTHM, words[e.phase], round(e.every_steps), e.where))
    return out


def changes(before: Report, after: Report) -> list[Change]:
    """Every recorded setting whose value differs, machine first."""
    out: list[Change] = []
    for group, b_list, a_list in (
            (MACHINE, machine_settings(before), machine_settings(after)),
            (SCRIPT, script_settings(before), script_settings(after)),
            (THREADS, thread_settings(before), thread_settings(after)),
            (RHYTHM, rhythm_settings(before), rhythm_settings(after))):
        out += _diff(group, {s.name: s for s in b_list}, {s.name: s for s in a_list})
    out += _loader_changes(before, after)
    return sorted(out, key=lambda c: ORDER.index(c.group))


def _diff(group: str, b: dict[str, Setting], a: dict[str, Setting]) -> list[Change]:
    """By name: one run's thread count, save interval or option is the other's, wherever its line
    (a save's interval changed keeps its call)."""
    out = []
    for name in list(b) + [k for k in a if k not in b]:
        sb, sa = b.get(name), a.get(name)
        vb, va = (sb.value if sb else UNSET), (sa.value if sa else UNSET)
        if vb == va or (group == MACHINE and (vb is None or va is None)):
            continue  # a machine fact one run did not record is not a different machine
        either = sa or sb
        out.append(Change(group, name, vb, va, either.where if either is not None else None))
    return out


def _loader_changes(before: Report, after: Report) -> list[Change]:
    out = []
    for lb, la in pair_loaders(before, after):
        if lb is None or la is None:
            lo = lb or la
            assert lo is not None
            out.append(Change(LOADER, "DataLoader", lo.site if lb else UNSET, lo.site if la else UNSET,
                              lo.site))
            continue
        workers_toggled = (lb.num_workers or 0) == 0 or (la.num_workers or 0) == 0
        for name in LOADER_FIELDS:
            vb, va = getattr(lb, name), getattr(la, name)
            if name in _WITH_WORKERS and (vb is None or va is None) and workers_toggled:
                continue  # set only where there are workers: it follows from num_workers
            if vb != va:
                out.append(Change(LOADER, name, vb, va, la.site or lb.site,
                                  lb.site if lb.site != la.site else None))
    return out
