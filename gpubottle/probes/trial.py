"""A trial's change, applied from inside the script's process without editing its code.

Only in the bounded trial runs of `gpubottle run --try-fixes` (never in the user's own run): the
DataLoader settings (num_workers, persistent_workers, prefetch_factor, pin_memory) replace what the
script passed to every DataLoader it builds; torch's intra-op thread count is set at import and
replaces the script's own set_num_threads calls; `replay` keeps the first batches each loader
yields and hands them out again, so the step runs as if input cost nothing (the upper bound of
any input fix). The keys are those of a Fix's `change`.
"""

from __future__ import annotations

import inspect
from typing import Any

LOADER_KEYS = ("num_workers", "persistent_workers", "prefetch_factor", "pin_memory")
THREADS_KEY = "torch.set_num_threads"
REPLAY_KEY = "replay"
REPLAY_BATCHES = 4  # distinct batches replayed: enough that caches see more than one


def loader_kwargs(orig_init: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                  trial: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The DataLoader's arguments with the trial's settings in place of the script's."""
    wanted = {k: trial[k] for k in LOADER_KEYS if k in trial}
    if not wanted:
        return args, kwargs
    bound = inspect.signature(orig_init).bind(None, *args, **kwargs)
    params = dict(bound.arguments)
    params.pop(next(iter(params)))  # self
    for name, value in wanted.items():
        params[name] = value
    if not params.get("num_workers"):  # both are errors without workers
        params.pop("persistent_workers", None)
        params.pop("prefetch_factor", None)
    extra = params.pop("kwargs", {})  # a **kwargs parameter, if the signature has one
    return (), {**params, **extra}


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
