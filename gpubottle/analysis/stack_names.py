"""Naming what the main thread did during start-up, from its stack samples: the package being
imported, or the user function the time went to (a dataset parsing its files in __init__). Time
inside the loop is named by analysis/loop_time.py's named_time."""

from __future__ import annotations

import functools
import linecache
import os
import re
from collections import Counter

from gpubottle.analysis.stack_shares import def_line
from gpubottle.analysis.stacks import Frame
from gpubottle.analysis.work_kinds import work_kind
from gpubottle.evidence.account import SAMPLES_READ
from gpubottle.probes.sites import OWN_DIR, is_user_file, place

Named = tuple[str, str | None, float]  # name, file:line of its def (None for an import), share
OWN_STARTUP_PART = "gpubottle installing its probes"  # (the account moves it to gpubottle's line)

_PACKAGE = re.compile(r"(?:site|dist)-packages/([A-Za-z0-9_]+)(?:/([A-Za-z0-9_]+)/)?")


_OWN = OWN_DIR + os.sep


@functools.lru_cache(maxsize=4096)
def _is_own(file: str, part: str = "") -> bool:
    """Whether a frame's file is in gpubottle (its `part`, e.g. "probes"): asked for every frame of
    every start-up sample, a few files each (abspath's getcwd and normpath were 90 ms a run)."""
    return os.path.abspath(file).startswith(_OWN + part)


def _site(f: Frame) -> str:
    return place(f.file, def_line(f.file, f.line, f.name))


def _function(f: Frame) -> str:
    """A function's name, comprehensions folded into the function that holds them."""
    return f.name.split(".<locals>.")[0] if ".<locals>." in f.name else f.name


def _read_by_index(st: list[Frame], user: Frame) -> tuple[str, str] | None:
    """A dataset's __getitem__ called straight from the script's own line before training (no
    DataLoader between: `labels = [ds[i][1] for i in range(len(ds))]`, 0.86 s of a 20,000-image
    run's start-up said as "Images.__getitem__" at its def): named as the samples read one by one,
    at the line that reads them."""
    if not user.name.endswith(".__getitem__"):
        return None
    at = st.index(user)
    caller = next((f for f in reversed(st[:at]) if is_user_file(f.file)), None)
    # (a DataLoader between is its pre-pass, said apart; torch's Subset or ConcatDataset between,
    # `[train_ds[i][1] for i in ...]` after random_split, is this)
    if caller is None or any("torch/utils/data/dataloader.py" in f.file.replace("\\", "/")
                             or "torch/utils/data/_utils/" in f.file.replace("\\", "/")
                             for f in st[st.index(caller) + 1:at]):
        return None
    return f"{SAMPLES_READ}, by {_function(user)}", place(caller.file, caller.line)


def _ours(st: list[Frame]) -> bool:
    """gpubottle's probes at work, not a wrapper of theirs that called into the script's torch (the
    optimizer's __init__ wrapped by the probes, importing torch._dynamo on first use) nor the
    import its watcher wraps (`import torch` loading torch._C, C code beneath importlib's frames:
    0.29 s of a run once said as "gpubottle installing its probes")."""
    inner = max((i for i, f in enumerate(st) if _is_own(f.file, "probes")), default=None)
    return inner is not None and not any("torch" in f.file or f.file.startswith("<frozen importlib")
                                         for f in st[inner + 1:])


_IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))")


def _imported(st: list[Frame]) -> str | None:
    """The top-level package a sample was importing, when it was (importlib's frames on it); where
    only importlib's frames are beneath (a C extension loading), the module the user's line imports."""
    inside = False
    for f in st:
        if f.file.startswith("<frozen importlib"):
            inside = True
            continue
        if inside and not f.file.startswith("<") and not _is_own(f.file):
            path = f.file.replace("\\", "/")
            m = _PACKAGE.search(path)
            if m:  # the package and its sub-package: torch._dynamo, imported on first use
                return m.group(1) + (f".{m.group(2)}" if m.group(2) else "")
            return os.path.splitext(os.path.basename(path))[0]
    if inside:
        user = next((f for f in reversed(st) if is_user_file(f.file)), None)
        m = _IMPORT_LINE.match(linecache.getline(user.file, user.line)) if user is not None else None
        if m:
            return (m.group(1) or m.group(2)).split(".")[0]
    return None


# Where a whole stack starts: a module's top level (`python -c`'s, the script's), runpy's start of a
# module (`python -m`, a notebook's kernel), a thread's bootstrap.
_ENTRIES = ("<module>", "_run_module_as_main", "_run_code")


def _entry(f: Frame) -> bool:
    return f.name in _ENTRIES or f.name.rsplit(".", 1)[-1] in ("_bootstrap", "_bootstrap_inner")


def startup_items(stacks: list[list[Frame]]) -> list[Named]:
    """What start-up spent its samples on: `import <package>`, or the innermost user function (the
    work itself: a dataset's __init__ parsing files), else the library function it was in."""
    if not stacks:
        return []
    counts: Counter[tuple[str, str | None]] = Counter()
    for st in stacks:
        # (a stack whose outermost frame is no entry point: py-spy read it torn, with nothing that
        # called it; "_path_split.<locals>.<genexpr>" of importlib, alone, was named start-up work,
        # and inspect's four frames under `import torch._dynamo` "Signature.__init__ 0.29 s")
        if not st or not _entry(st[0]):
            continue
        if _ours(st):
            counts[(OWN_STARTUP_PART, None)] += 1
            continue
        pkg = _imported(st)
        kind = work_kind(st) if pkg is None else None
        if pkg is not None or kind is not None:  # named with the user's line that caused it
            user = next((f for f in reversed(st) if is_user_file(f.file)), None)
            name = f"import {pkg}" if pkg is not None else str(kind)
            counts[(name, place(user.file, user.line) if user else None)] += 1
            continue
        user = next((f for f in reversed(st) if is_user_file(f.file)
                     and f.name not in ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>")), None)
        read = _read_by_index(st, user) if user is not None else None
        if read is not None:
            counts[read] += 1
        elif user is not None and user.name != "<module>":
            counts[(_function(user), _site(user))] += 1
        elif user is not None:
            counts[(f"{os.path.basename(user.file)} top level", place(user.file, user.line))] += 1
        else:
            counts[(st[-1].name, None)] += 1
    return [(name, site, round(n / len(stacks), 4)) for (name, site), n in counts.most_common(4)]
