"""What a DataLoader was built with, read from the object torch made (never from the call: a
library or a wrapper may have set any of it): settings, the dataset's class, size and code site,
the sampling's split between a job's ranks and an IterableDataset's between workers."""

from __future__ import annotations

import multiprocessing
import re
from typing import Any

from gpubottle.probes.dataset_census import held_objects
from gpubottle.probes.getitem_source import indexed_attrs, rows
from gpubottle.probes.sites import qualname, user_code_site


def loader_config(loader: Any, loader_id: int) -> dict[str, Any]:
    """What a DataLoader was built with, as LoaderBuilt carries it: its settings, its dataset's
    class, size, code site and (with workers) the objects each worker would copy, how its sampling
    splits between ranks and workers."""
    ds = loader.dataset
    cfg: dict[str, Any] = {"id": loader_id}
    nw = int(loader.num_workers)
    cfg["num_workers"] = nw
    bs = loader.batch_size
    given = loader.batch_sampler if bs is None else None  # the script's batch_sampler=
    if given is not None:
        bs = getattr(given, "batch_size", None)
        cfg["batch_sampler"] = type(given).__name__
    cfg["batch_size"] = bs
    cfg["pin_memory"] = bool(loader.pin_memory)
    cfg["prefetch_factor"] = loader.prefetch_factor if nw > 0 else None
    cfg["persistent_workers"] = bool(loader.persistent_workers)
    # (torch keeps its drop_last False beside a batch_sampler=: the sampler's own decides)
    cfg["drop_last"] = bool(getattr(given, "drop_last", False) if given is not None else loader.drop_last)
    ctx = loader.multiprocessing_context
    if nw > 0:
        cfg["start_method"] = (
            ctx.get_start_method()
            if ctx is not None
            else multiprocessing.get_start_method(allow_none=True)
            or multiprocessing.get_context().get_start_method()
        )
    inner = _wrapped(ds)
    cfg["dataset_class"] = qualname(inner)
    iterable = False
    try:
        from torch.utils.data import IterableDataset

        iterable = isinstance(ds, IterableDataset)
    except Exception:
        pass
    cfg["iterable"] = iterable
    method = getattr(type(inner), "__iter__" if iterable else "__getitem__", None)
    cfg["dataset_getitem"] = user_code_site(method, type(inner))
    if iterable:  # every worker runs __iter__: does each take its own share of the stream?
        cfg["shards"] = _shards(type(ds), loader.worker_init_fn)
    # What orders the samples: beside a batch_sampler= torch's own `sampler` is an unused default.
    sampler = (given.sampler if type(given).__name__ == "BatchSampler" and hasattr(given, "sampler")
               else given) if given is not None else getattr(loader, "sampler", None)
    cfg["sampler"] = type(sampler).__name__ if sampler is not None else None
    cfg["rank_split"] = _rank_split(loader, type(ds), iterable)
    cfg["world"] = _world()
    try:
        cfg["dataset_len"] = len(ds)
    except Exception:
        cfg["dataset_len"] = None
    cfg["dataset_objects"] = held_objects(ds) if nw > 0 else None  # only workers copy it
    init = loader.worker_init_fn
    if nw > 0 and init is not None:  # the user's function each worker runs as it starts
        site = user_code_site(init)
        name = getattr(init, "__name__", None) or qualname(init)
        cfg["worker_init"] = f"{name} ({site})" if site else name
    collate = loader.collate_fn
    name = getattr(collate, "__name__", None)
    cfg["collate_fn"] = None if name == "default_collate" else (name or qualname(collate))
    try:
        cfg["batch_indexable"] = _batch_indexable(loader, ds)
    except Exception:  # (a dataset's attribute that raises when read: not known, the rest kept)
        cfg["batch_indexable"] = None
    return cfg


def _wrapped(ds: Any) -> Any:
    """The user's dataset inside torch's wrappers (random_split's Subset, a ConcatDataset of one
    class): its __getitem__ is where a sample's work is, and what a fix names; the wrapper's only
    maps the index (a text dataset in a Subset was named as torch's Subset, its tokenizing unnamed)."""
    try:
        from torch.utils.data import ConcatDataset, Subset
    except Exception:
        return ds
    for _ in range(8):  # (a Subset of a Subset: a split split again)
        if isinstance(ds, Subset):
            ds = ds.dataset
        elif isinstance(ds, ConcatDataset) and ds.datasets and \
                len({type(d) for d in ds.datasets}) == 1:
            ds = ds.datasets[0]
        else:
            break
    return ds


def _batch_indexable(loader: Any, ds: Any) -> bool | None:
    """The loader fetches its batches a sample at a time (torch's own BatchSampler over one of
    torch's index samplers, index_sampler, made from batch_size= or passed as batch_sampler=) from a
    dataset that takes a whole batch's indices in one call (takes_index_lists). Each batch is then
    B calls and a stack of B rows, where one index of the tensors would do. None where torch's
    classes cannot be read."""
    try:
        import torch.utils.data  # noqa: F401 - torch's classes, for torch_batch_sampler
    except Exception:
        return None
    # (torch's from batch_size=, or the script's own batch_sampler=)
    return torch_batch_sampler(getattr(loader, "batch_sampler", None)) and takes_index_lists(ds)


def index_sampler(sampler: Any) -> bool:
    """One of torch's samplers that yields one int index at a time, which a BatchSampler can group
    for the dataset whole: RandomSampler, SequentialSampler (from shuffle=), and the script's own
    WeightedRandomSampler or SubsetRandomSampler passed as sampler=. Not a DistributedSampler:
    its set_epoch is called through loader.sampler, which would then be the BatchSampler."""
    from torch.utils.data import RandomSampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler

    return type(sampler) in (RandomSampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler)


def torch_batch_sampler(bs: Any) -> bool:
    """torch's own BatchSampler over an index_sampler: its batches are only the sampler's indices
    in groups, which the dataset can be handed whole."""
    from torch.utils.data import BatchSampler

    return type(bs) is BatchSampler and index_sampler(getattr(bs, "sampler", None))


def takes_index_lists(ds: Any) -> bool:
    """`ds[list_of_indices]` gives the batch those indices make: a TensorDataset, a dataset whose
    __getitem__ only returns its own tensors or arrays indexed by its argument (`return self.x[i],
    self.y[i]`, the usual tabular Dataset), or Subsets of either (random_split's)."""
    try:
        from torch.utils.data import Subset, TensorDataset
    except Exception:
        return False
    while isinstance(ds, Subset):
        ds = ds.dataset
    if type(ds) is TensorDataset:
        return True
    return _indexes_only(ds)


def _indexes_only(ds: Any) -> bool:
    """Its own __getitem__ only indexes its tensors or arrays with its argument (getitem_source)."""
    method = getattr(type(ds), "__getitem__", None)
    attrs = indexed_attrs(method) if method is not None else None
    return bool(attrs) and all(rows(getattr(ds, a, None)) for a in attrs or [])


_BY_RANK = re.compile(r"\b(get_rank|rank|RANK|world_size|num_replicas|split_dataset_by_node|"
                      r"process_index|num_processes)\b")


def _rank_split(loader: Any, cls: Any, iterable: bool) -> bool | None:
    """Whether each rank of a job would take its own share: a sampler with DistributedSampler's API
    (num_replicas) or accelerate's (num_processes), anywhere in the loader's sampling; an
    IterableDataset whose code asks for its rank. None where the source cannot be read."""
    import inspect

    bs = getattr(loader, "batch_sampler", None)
    for s in (getattr(loader, "sampler", None), bs, getattr(bs, "sampler", None),
              getattr(bs, "batch_sampler", None)):
        if s is None:
            continue
        name = type(s).__name__
        if any(hasattr(s, a) for a in ("num_replicas", "num_processes")) or "Distributed" in name \
                or "Shard" in name:
            return True
    if not iterable:
        return False
    try:
        return bool(_BY_RANK.search(inspect.getsource(cls)))
    except (OSError, TypeError):
        return None


def _world() -> int | None:
    """torch.distributed's world size, when a process group is up."""
    try:
        import torch.distributed as dist

        return int(dist.get_world_size()) if dist.is_available() and dist.is_initialized() else None
    except Exception:
        return None


def _shards(cls: Any, worker_init_fn: Any) -> bool | None:
    """An IterableDataset that splits its stream between workers: its __iter__ (or the loader's
    worker_init_fn) asks torch which worker it runs in. None when the source cannot be read."""
    import inspect

    try:
        if worker_init_fn is not None:
            return True
        return "get_worker_info" in inspect.getsource(cls)
    except (OSError, TypeError):
        return None
