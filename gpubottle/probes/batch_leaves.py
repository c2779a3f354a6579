"""What each DataLoader's first batch is made of: its tensors and its other leaves.

Taking a batch from a worker costs the main process per tensor (its storage crosses as shared memory
and a file descriptor) and per other leaf (each pickled and unpickled), however many workers there
are. Whether a dataset could return fewer, larger pieces depends on what its batches hold: an
(x, y) pair of tensors already crosses as two. Counted once per loader, on the loop's first batch
from it (a walk over its containers, up to MAX_LEAVES).
"""

from __future__ import annotations

from typing import Any

from gpubottle.probes.recorder import Recorder
from gpubottle.wire import BatchLeaves

MAX_LEAVES = 100_000  # a batch of Python lists of values: counted up to here


def count_leaves(batch: Any) -> tuple[int, int, int]:
    """(tensors, other leaves, the tensors' bytes) in a batch: through lists, tuples, dicts' values
    and named tuples."""
    import torch

    tensors = objects = nbytes = 0
    todo = [batch]
    while todo and tensors + objects < MAX_LEAVES:
        obj = todo.pop()
        if isinstance(obj, torch.Tensor):
            tensors += 1
            nbytes += obj.element_size() * obj.nelement()
        elif isinstance(obj, (list, tuple)):
            todo.extend(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        else:
            objects += 1
    return tensors, objects, nbytes


class BatchLeavesProbe:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.seen: set[int] = set()  # the loaders already counted

    def see(self, loader: int, batch: Any) -> None:
        if loader in self.seen:
            return
        self.seen.add(loader)
        try:
            self.recorder.emit(BatchLeaves(loader, *count_leaves(batch)))
        except Exception:
            pass  # a batch that cannot be walked: not known
