"""What the script keeps in its own lists and dicts, counted at each tensor census: the tensor
groups see tensors only, and a loop that keeps numpy arrays, Python numbers or dicts each step
(`preds.append(out.numpy())`, `log.append({"loss": ...})`) grows the same. The containers are
found from the script's side (its modules' globals, the locals of its running frames, and one
level of attributes of its own objects), already named as the user wrote them; at the second
census the one whose items grew most, by what its newest items hold, is the one said.
"""

from __future__ import annotations

import operator
import sys
from collections import deque
from itertools import repeat
from typing import Any

from gpubottle.probes.buffers import item_bytes
from gpubottle.probes.capacity import list_capacity
from gpubottle.probes.sites import is_user_file, short_path

KINDS = (list, dict, deque)
DATASET = "dataset"  # a bound's kind: len(dataset), for its cache by sample index
CAPACITY = "capacity"  # a bound's kind: a number the container's class keeps it below
MIN_GROWN = 32  # items added between the censuses: fewer is the loop's churn, not a store
TOP = 4  # containers sized at the second census (each a look at its newest items)
SCAN_MAX = 200_000  # items of one container looked through for a tensor by identity (~2 ms)


def _kind(obj: Any) -> str:
    return type(obj).__name__


# How a holder is named, here and by the tensor census (leaks.holder_of): the two names of one
# container must be equal strings, so the container one of them named is not said twice.
def module_name(name: str, path: str, kind: str) -> str:
    return f"{name} ({short_path(path)}, a module-level {kind})"


def local_name(name: str, function: str, path: str, kind: str) -> str:
    return f"{name} (a local {kind} in {function}, {short_path(path)})"


def attribute_name(cls: str, name: str, kind: str) -> str:
    return f"{cls}.{name} (a {kind} attribute)"


def _module_file(cls: type) -> str | None:
    mod = sys.modules.get(getattr(cls, "__module__", "") or "")
    return getattr(mod, "__file__", None) if mod is not None else None


def _dataset_len(obj: Any) -> int | None:
    """A map-style dataset's length (it has both __getitem__ and __len__): a cache it keeps by
    sample index holds that many items at most."""
    cls = type(obj)
    if not (hasattr(cls, "__getitem__") and hasattr(cls, "__len__")):
        return None
    try:
        return int(len(obj))
    except Exception:
        return None


def _attrs(obj: Any, out: dict[str, Any], bounds: dict[str, tuple[int, str]]) -> None:
    """Containers among the attributes of one of the script's own objects (its class defined in a
    user file): 'Trainer.history (a list attribute)'; a DataLoader's dataset is looked into too.
    Into `bounds`: a dataset's dicts, bounded by its length; a list its class keeps below one of
    its numbers (capacity.py)."""
    cls = type(obj)
    inner = getattr(obj, "dataset", None) if cls.__name__ == "DataLoader" else None
    if inner is not None:
        _attrs(inner, out, bounds)
        return
    f = _module_file(cls)
    if f is None or not is_user_file(f):
        return
    try:
        items = list(vars(obj).items())
    except TypeError:
        return
    size = None
    for k, v in items:
        if type(v) in KINDS:
            name = attribute_name(cls.__name__, k, _kind(v))
            out.setdefault(name, v)
            if isinstance(v, dict):
                size = _dataset_len(obj) if size is None else size
                if size:
                    bounds[name] = (size, DATASET)
            elif isinstance(v, list) and (cap := list_capacity(obj, k)) is not None:
                bounds[name] = (cap[1], f"{CAPACITY} {cap[0]}")


def _look(name: str, v: Any, out: dict[str, Any], bounds: dict[str, tuple[int, str]]) -> None:
    """One of the script's values: a container, or an object of its own whose attributes may be.
    (A value whose attribute lookup raises, a proxy's, is passed over: it is the user's object.)"""
    try:
        if type(v) in KINDS:
            out.setdefault(name, v)
        elif not isinstance(v, type) and hasattr(v, "__dict__"):
            _attrs(v, out, bounds)
    except Exception:
        pass


def user_containers(frame: Any, bounds: dict[str, tuple[int, str]] | None = None) -> dict[str, Any]:
    """name -> list, dict or deque the script holds, from `frame` outward and its modules. Into
    `bounds`: a dataset's dict attribute -> (the dataset's length, DATASET) (a cache by sample
    index); a list attribute its class bounds -> (that bound, "capacity Class.attribute")."""
    out: dict[str, Any] = {}
    bounds = {} if bounds is None else bounds
    f = frame
    while f is not None:
        code = f.f_code
        if is_user_file(code.co_filename):
            at_top = code.co_name == "<module>"
            for k, v in list(f.f_locals.items()):
                name = (module_name(k, code.co_filename, _kind(v)) if at_top
                        else local_name(k, code.co_name, code.co_filename, _kind(v)))
                _look(name, v, out, bounds)
        f = f.f_back
    for mod in list(sys.modules.values()):
        path = getattr(mod, "__file__", None)
        if not isinstance(path, str) or not is_user_file(path):
            continue
        for k, v in list(vars(mod).items()):
            if not k.startswith("__"):
                _look(module_name(k, path, _kind(v)), v, out, bounds)
    return out


def held_in(target: Any, containers: dict[str, Any]) -> str | None:
    """The name of the script's own container (user_containers) that holds `target` itself, found
    by identity at C speed: the common leak (`preds.append(out)`) named without the heap scans of
    leaks.holder_of (each gc.get_referrers walks every object: ~30 ms at 170k of them, a census
    paid two). None where no container holds it directly (in a tuple in a list, in a graph)."""
    for name, c in containers.items():
        try:
            if len(c) > SCAN_MAX:
                continue
            items = c.values() if isinstance(c, dict) else c
            if any(map(operator.is_, items, repeat(target))):
                return name
        except Exception:  # a container changed under us (another thread): the slow path decides
            continue
    return None


def _newest(obj: Any) -> Any:
    if isinstance(obj, dict):
        return next(reversed(obj.values()), None)
    return obj[-1] if len(obj) else None


def describe(item: Any) -> str:
    """'a (256,) int64 numpy array', 'a dict of 3 keys', 'a tuple of 5', 'a float'."""
    shape, dtype = getattr(item, "shape", None), getattr(item, "dtype", None)
    if shape is not None and dtype is not None:
        lib = type(item).__module__.split(".")[0]
        what = "tensor" if hasattr(item, "untyped_storage") else f"{lib} array"
        return f"a {tuple(shape)} {str(dtype).replace('torch.', '')} {what}"
    if isinstance(item, dict):
        return f"a dict of {len(item)} keys"
    if isinstance(item, (tuple, list)):
        return f"a {type(item).__name__} of {len(item)}"
    return f"a {type(item).__name__}"


def _values(obj: Any) -> Any:
    return list(obj.values())[-16:] if isinstance(obj, dict) else obj


def _by_index(d: Any, bound: int) -> bool:
    """Its newest keys are sample indices below `bound`."""
    keys = [k for _, k in zip(range(16), reversed(d))]
    return bool(keys) and all(isinstance(k, int) and 0 <= k < bound for k in keys)


def bounded_containers(before: dict[str, int] | None, now: dict[str, Any],
                       bounds: dict[str, tuple[int, str]]) -> list[list[Any]]:
    """The script's containers with a bound, not full, that grew since the first census (at the
    first: that hold MIN_GROWN or more), each a bounded buffer (said as one: rules/memory/
    buffers.py): a dataset's dict keyed by sample index, [name, items, len(dataset), bytes an
    item, "dataset", items at the first census]; a list its class keeps below one of its numbers
    (the old DQN tutorial's ReplayMemory), [name, items, that number, bytes an item, "capacity",
    items at the first census or None, "Class.attribute"]."""
    out = []
    for name, (bound, how) in bounds.items():
        d = now.get(name)
        if d is None or not len(d) < bound or (how == DATASET and not _by_index(d, bound)):
            continue
        kind, _, by = how.partition(" ")
        tail = [by] if by else []
        if before is None and len(d) >= MIN_GROWN:
            out.append([name, len(d), bound, item_bytes(_values(d)), kind, *([None] if by else []), *tail])
        elif before is not None and name in before and before[name] < len(d):
            out.append([name, len(d), bound, item_bytes(_values(d)), kind, before[name], *tail])
    return out


def grew_most(before: dict[str, int], now: dict[str, Any], skip: set[str] | None = None) -> list[Any] | None:
    """[name, items now, items added, bytes an item, what an item is] for the container whose
    items grew most by what they hold, or None. Not those in `skip` (the one the tensor census
    named, the datasets' caches)."""
    # (A deque with a maxlen is a bounded buffer, said as one: probes/buffers.py.)
    rising = sorted(((len(v) - before[k], k, v) for k, v in now.items()
                     if k in before and k not in (skip or ()) and getattr(v, "maxlen", None) is None),
                    key=lambda x: -x[0])
    best: list[Any] | None = None
    most = 0
    for added, name, obj in rising[:TOP]:
        if added < MIN_GROWN:
            break
        size = item_bytes(_values(obj))
        if best is None or added * size > most:
            best, most = [name, len(obj), added, size, describe(_newest(obj))], added * size
    return best
