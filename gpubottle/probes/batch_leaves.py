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
PAD_MIN_LENGTH = 16  # sequences at least this long are looked at for trailing padding
PAD_ENDED_ROWS = 0.5  # ...where half the rows or more end with the same value (the pad id)
PAD_IN_PREFIX = 0.1  # ...and that value is at most this share of what comes before it (not multi-hot)


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


def padding(batch: Any) -> list[Any] | None:
    """The batch's most padded integer tensor of sequences (rows x positions): [the share of its
    positions that are trailing padding, its length, the median and the longest row's length up to
    its padding]. Padding is a run of one value (the pad id: a token id, a mask's 0) that ends most
    rows and hardly appears before it. None where no tensor looks padded."""
    import torch

    best: list[Any] | None = None
    todo, seen = [batch], 0
    while todo and seen < MAX_LEAVES:
        obj = todo.pop()
        seen += 1
        if isinstance(obj, (list, tuple)):
            todo.extend(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif (isinstance(obj, torch.Tensor) and obj.dim() == 2 and obj.shape[0] >= 2
              and obj.shape[1] >= PAD_MIN_LENGTH and not obj.is_floating_point() and not obj.is_complex()
              and obj.device.type == "cpu"):
            found = _padded(obj)
            if found is not None and (best is None or found[0] > best[0]):
                best = found
    return best


def _padded(t: Any) -> list[Any] | None:
    import torch

    rows, length = int(t.shape[0]), int(t.shape[1])
    pad = torch.mode(t[:, -1]).values
    if float((t[:, -1] == pad).float().mean()) < PAD_ENDED_ROWS:
        return None
    real = t != pad
    used = torch.where(real.any(1), length - real.flip(1).int().argmax(1), torch.zeros_like(real[:, 0],
                                                                                            dtype=torch.long))
    prefix = int(used.sum())
    if prefix == 0:
        return None
    inside = prefix - int(real.sum())  # pad values before each row's padding
    if inside > PAD_IN_PREFIX * prefix:
        return None
    share = 1.0 - prefix / (rows * length)
    return [round(share, 4), length, int(used.median()), int(used.max())]


# The first batches of a loader read for their padding: a batch padded to its own longest sample
# has a length that varies from batch to batch, a fixed padding does not (which fix removes it).
PAD_BATCHES = 4


class BatchLeavesProbe:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.seen: set[int] = set()  # the loaders done with (their first PAD_BATCHES batches read)
        self._read: dict[int, int] = {}

    def see(self, loader: int, batch: Any) -> None:
        if loader in self.seen:
            return
        n = self._read[loader] = self._read.get(loader, 0) + 1
        if n >= PAD_BATCHES:
            self.seen.add(loader)
        if n > 1:  # (its leaves are counted once: the later batches only say their padding)
            try:
                pad = padding(batch)
                if pad is not None:
                    self.recorder.emit(BatchLeaves(loader, -1, -1, None, pad))
            except Exception:
                pass
            return
        try:
            try:
                pad = padding(batch)
            except Exception:
                pad = None  # (not known: the leaves are still counted)
            self.recorder.emit(BatchLeaves(loader, *count_leaves(batch), padding=pad))
        except Exception:
            pass  # a batch that cannot be walked: not known
