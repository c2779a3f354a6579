"""DataLoader workers holding copies of the dataset, said: the facts, the oom-risk reason and the fix
for spawned copies, copy-on-read growth and copies already held."""

from __future__ import annotations

from gpubottle.report import Fact, Fix
from gpubottle.rules.memory.workers import CopyOnRead, HeldCopies, SpawnedCopies
from gpubottle.units import duration, gib, pct


def _started(d: SpawnedCopies) -> str:
    return {"spawn": "spawned", "forkserver": "forkserver-started"}.get(d.start_method, "")


def facts(d: CopyOnRead) -> list[Fact]:
    if isinstance(d, SpawnedCopies):
        nw, per = d.workers, d.per_bytes
        out = [Fact(
            f"each of the {nw} DataLoader workers ({d.start_method}) holds {gib(d.own_bytes)} of its own, "
            f"about {gib(per)} more than a {_started(d)} worker that loads nothing: it unpickled its own "
            f"copy of the dataset; {gib(nw * per)} across them, the run's peak "
            f"{gib(d.peak_tree_bytes or d.peak_bytes)}"
            + (f" of {gib(d.limit_bytes)}" if d.limit_bytes else ""),
            "worker_copies_bytes", float(nw * per))]
        if d.limit_bytes:
            out.append(Fact(f"with {2 * nw} workers it would need about "
                            f"{gib(d.main_bytes + 2 * nw * per)}; each worker adds {gib(per)}",
                            "per_worker_bytes", float(per)))
        return out
    if isinstance(d, HeldCopies):
        return [Fact(
            f"each of the {d.workers} forked DataLoader workers holds {gib(d.per_bytes)} of its own, "
            f"{pct(d.per_bytes / d.dataset_bytes)} of the {gib(d.dataset_bytes)} the main process held "
            "before they started: they copied the pages of the dataset they read (reading a Python "
            "object writes its reference count)", "worker_copies_bytes", float(d.workers * d.per_bytes))]
    out = [Fact(
        f"the {d.workers} DataLoader workers' own memory grows by {gib(d.bytes_per_s * 60)}/min (R^2 "
        f"{d.r2:.2f}) while the script keeps nothing: forked workers copy the "
        "pages of the dataset they read (reading a Python object writes its reference count)",
        "workers_growth_bytes_per_s", round(d.bytes_per_s, 1))]
    if d.dataset_bytes:
        copies = f"{d.workers} x {gib(d.dataset_bytes)} = {gib(d.bound_bytes)}"
        if d.exhaustion_s is not None:
            out.append(Fact(
                f"it stops only when each worker holds a copy: about {copies}, more than the "
                f"{gib(d.available_bytes)} available: memory runs out in about {duration(d.exhaustion_s)}",
                "exhaustion_s", round(d.exhaustion_s, 1)))
        else:
            eta = d.left_bytes / d.bytes_per_s
            out.append(Fact(
                f"it stops when each worker holds a copy: about {copies}, "
                f"{'reached in about ' + duration(eta) if d.left_bytes else 'already reached'}; "
                f"{gib(d.available_bytes)} was available", "copy_bound_bytes", float(d.bound_bytes)))
    return out


def reason(d: CopyOnRead) -> str:
    if isinstance(d, SpawnedCopies):
        return (f"each {_started(d)} DataLoader worker holds its own copy of the dataset "
                f"({d.workers} x {gib(d.per_bytes)})")
    if isinstance(d, HeldCopies):
        return (f"the forked DataLoader workers hold copies of the dataset ({d.workers} x "
                f"{gib(d.per_bytes)})")
    if d.exhaustion_s is not None:
        return ("the DataLoader workers copy the dataset and run memory out in about "
                f"{duration(d.exhaustion_s)}")
    return f"the DataLoader workers copy the dataset as they read it (+{gib(d.bytes_per_s * 60)}/min)"


def fix(d: CopyOnRead) -> Fix:
    if isinstance(d, SpawnedCopies):
        return Fix(
            text=f"every {_started(d)} worker loads the dataset again: keep its data where workers "
            "share it instead: save the array to a file once, keep only its path in the dataset and "
            "open it with np.load(path, mmap_mode='r') on first use in __getitem__ (each worker maps "
            "the same file; an array passed in, even a memmap, is pickled whole into every worker), or "
            "hold it as a torch tensor (passed through shared memory), or "
            "multiprocessing_context='fork' on Linux when the main process has not used CUDA yet; or "
            "fewer workers (each holds a copy)", where=d.where)
    return Fix(
        text="store the dataset as one numpy array or torch tensor instead of Python objects (lists, "
        "dicts, strings): reading a row then writes no reference count, and the workers keep sharing "
        f"its pages instead of holding {d.workers} copies", where=d.where)
