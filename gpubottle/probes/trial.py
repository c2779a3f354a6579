"""A trial's change, applied from inside the script's process without editing its code.

Only in the bounded trial runs of `gpubottle run --try-fixes` (never in the user's own run): the
DataLoader settings (num_workers, persistent_workers, prefetch_factor, pin_memory) replace what the
script passed to every DataLoader it builds; `batch_index` hands a dataset that takes a list of
indices (a TensorDataset...) each batch's at once, through a BatchSampler over the script's sampler;
torch's intra-op thread count is set at import and replaces the script's own set_num_threads calls;
`replay` keeps the first batches each loader yields and hands them out again, so the step runs as if
input cost nothing (the upper bound of any input fix); `fused` builds every torch optimizer that can
fuse with fused=True. The keys are those of a Fix's `change`.
"""

from __future__ import annotations

import inspect
from typing import Any

LOADER_KEYS = ("num_workers", "persistent_workers", "prefetch_factor", "pin_memory")
THREADS_KEY = "torch.set_num_threads"
REPLAY_KEY = "replay"
FUSED_KEY = "fused"
BATCH_INDEX_KEY = "batch_index"
REPLAY_BATCHES = 4  # distinct batches replayed: enough that caches see more than one


def loader_kwargs(orig_init: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                  trial: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The DataLoader's arguments with the trial's settings in place of the script's."""
    wanted = {k: trial[k] for k in LOADER_KEYS if k in trial}
    if not wanted and not trial.get(BATCH_INDEX_KEY):
        return args, kwargs
    bound = inspect.signature(orig_init).bind(None, *args, **kwargs)
    params = dict(bound.arguments)
    params.pop(next(iter(params)))  # self
    for name, value in wanted.items():
        params[name] = value
    if trial.get(BATCH_INDEX_KEY):
        batch_indexed(params)
    if not params.get("num_workers"):  # both are errors without workers
        params.pop("persistent_workers", None)
        params.pop("prefetch_factor", None)
    extra = params.pop("kwargs", {})  # a **kwargs parameter, if the signature has one
    return (), {**params, **extra}


def batch_indexed(params: dict[str, Any]) -> None:
    """DataLoader(ds, batch_size=B, shuffle=S, drop_last=D) as DataLoader(ds, batch_size=None,
    sampler=BatchSampler(RandomSampler(ds) if S else SequentialSampler(ds), B, D)): the fetcher then
    calls ds[indices] once a batch and collates nothing; DataLoader(ds, batch_size=B, sampler=X), X
    one of torch's index samplers (a WeightedRandomSampler), with BatchSampler(X, B, D);
    DataLoader(ds, batch_sampler=BatchSampler(...)) as DataLoader(ds, batch_size=None,
    sampler=BatchSampler(...)). Only for a dataset that takes a
    list of indices (loader_config.takes_index_lists), batched by torch's own sampler and collate."""
    from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler

    from gpubottle.probes.loader_config import index_sampler, takes_index_lists, torch_batch_sampler

    ds = params.get("dataset")
    size = params.get("batch_size", 1)
    given = params.get("batch_sampler")
    if (size is None or params.get("collate_fn") is not None or not takes_index_lists(ds)
            or (given is not None and not torch_batch_sampler(given))):
        return
    if given is not None:  # torch's own BatchSampler, passed as batch_sampler=: the same, as sampler=
        params["sampler"] = params.pop("batch_sampler")
        params["batch_size"] = None
        return
    sampler = params.get("sampler")
    if sampler is None:
        assert ds is not None
        sampler = (RandomSampler(ds, generator=params.get("generator")) if params.get("shuffle")
                   else SequentialSampler(ds))
    elif not index_sampler(sampler):
        return  # a sampler class of the script's own, or a DistributedSampler: left as written
    params["sampler"] = BatchSampler(sampler, int(size), bool(params.pop("drop_last", False)))
    params["batch_size"] = None
    params.pop("shuffle", None)


def threads(trial: dict[str, Any]) -> int | None:
    value = trial.get(THREADS_KEY)
    return int(value) if value else None


class Replay:
    """The first REPLAY_BATCHES batches of an iterator, then the same ones again, forever."""

    def __init__(self) -> None:
        self.kept: list[Any] = []
        self.i = 0

    def next(self, fetch: Any) -> Any:
        if len(self.kept) < REPLAY_BATCHES:
            try:
                batch = fetch()
            except StopIteration:
                if not self.kept:
                    raise
            else:
                self.kept.append(batch)
                return batch
        batch = self.kept[self.i % len(self.kept)]
        self.i += 1
        return batch


def fuse_optimizers() -> None:
    """Every torch.optim class whose constructor takes fused= builds with fused=True (a subclass of
    one, the script's own, goes through its parent's constructor and is fused with it)."""
    import functools

    import torch

    from gpubottle.probes.optimizer_info import accepts, fused_kwargs

    for name in dir(torch.optim):
        cls = getattr(torch.optim, name)
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)):
            continue
        if not accepts(cls, "fused"):
            continue
        if getattr(cls.__init__, "_gpubottle_fused", False):
            continue

        def wrap(orig: Any, cls: type) -> Any:
            @functools.wraps(orig)
            def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
                orig(self, *args, **fused_kwargs(cls, kwargs))

            __init__._gpubottle_fused = True  # type: ignore[attr-defined]
            return __init__

        cls.__init__ = wrap(cls.__init__, cls)  # type: ignore[method-assign]
