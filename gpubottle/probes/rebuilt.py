"""DataLoaders that a library rebuilds from the user's own (accelerate's prepare(), Lightning):
matched by their dataset, so the rebuilt loader's fixes point at the user's DataLoader(...) line."""

from __future__ import annotations

import weakref
from typing import Any


class UserLoaders:
    """The DataLoaders the user's own code built, by dataset: a loader a library builds later over
    the same dataset (accelerate's prepare(), Lightning's re-instantiation, a wrapper that copies a
    loader's arguments into a new one) is that loader rebuilt, and its fixes belong at the user's
    DataLoader(...) line, where `--patch` can change them."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, dict[str, Any]]] = {}

    def remember(self, ds: Any, cfg: dict[str, Any]) -> None:
        try:
            ref: Any = weakref.ref(ds)
        except TypeError:  # a dataset that takes no weak reference: held as long as its loader
            ref = lambda ds=ds: ds  # noqa: E731
        self._by_id.setdefault(id(ds), (ref, cfg))

    def origin(self, ds: Any) -> dict[str, Any] | None:
        """The user's loader over `ds`, or over the dataset `ds` wraps (a shard of it)."""
        for candidate in (ds, getattr(ds, "dataset", None)):
            if candidate is None:
                continue
            got = self._by_id.get(id(candidate))
            if got is not None and got[0]() is candidate:
                return got[1]
        return None
