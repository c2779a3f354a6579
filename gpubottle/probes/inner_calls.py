"""A module the model's own forward calls again and again in one training step, from a Python loop
in the user's code (model_calls.py's counted step: its module hooks see inner calls too):

- an RNN cell (nn.LSTMCell, nn.GRUCell, nn.RNNCell) stepped over the time steps (`for t in
  range(T): h, c = self.cell(x[:, t], (h, c))`): each call a few small matrix products and an
  autograd node, where nn.LSTM over the whole sequence does the same math in one call. Measured
  here (an LSTMCell of 128 over 64 steps, batch 32, forward and backward): 33 ms as the loop,
  12 ms as nn.LSTM. Recorded with its sizes and the time inside its forwards (backward runs in C,
  beyond any hook).
- a submodule called once per sample of the batch (`for i in range(x.size(0)):
  feats.append(self.enc(x[i]))`): each call pays every layer's per-call cost for one sample, where
  layers such as nn.Linear take the whole batch at once. Measured here (a 2-layer encoder over 64
  sets of 16 x 64): 11.8 ms a step as the loop, 1.6 ms on the whole batch. Recorded with its first
  input's shape and the outermost call's, which tell a sample of it.

- sibling modules, many of one class called one by one from the same line (`torch.cat([conv(x[:,
  c:c + 1]) for c, conv in enumerate(self.convs)], 1)`: a depthwise convolution as 64 Conv1d(1, 1,
  7); a head per task on the same features): each call one small op, where one module (a grouped
  convolution, a Linear as wide as all the heads) or one batched call over their stacked weights
  computes them all. Measured here (64 Conv1d(1, 1, 7) over 32 x 256 steps, forward and
  backward): 300 steps 15.6 s as the list, 4.1 s as Conv1d(64, 64, 7, groups=64).

Only modules the user's line names (`self.cell`, `self.enc`: model_calls.called_as) are counted:
the layers inside them, called as often, are their parts. Whether a cell's loop could be one call
is read from that line's source by the analysis (analysis/forward_loops.py)."""

from __future__ import annotations

import time
import weakref
from typing import Any

from gpubottle.probes.sites import called_as, caller_site, user_frame

INNER_CALLS_MIN = 4  # calls of one module in the counted step, recorded from (cells: CELL_CALLS_MIN)
CELL_CALLS_MIN = 8
SIBLINGS_MIN = 8  # modules of one class called from one line, recorded from
# What a sibling's configuration says, by the attribute torch's layers keep it in
_CONFIG = ("in_channels", "out_channels", "kernel_size", "groups", "in_features", "out_features")


def first_shape(args: Any) -> list[int] | None:
    first = next((a for a in args if hasattr(a, "shape")), None)
    try:
        return [int(d) for d in first.shape] if first is not None else None
    except Exception:
        return None


class InnerCalls:
    def __init__(self) -> None:
        from torch import nn

        self.cell_types: tuple[type, ...] = (nn.RNNCellBase,)
        # id -> [a weak reference to the module, calls, site, name, seconds in its forwards, its
        # first input's shape, the outermost call's first input's shape]; name None: not named on
        # the user's line (ignored). Weak: a module built inside forward must die as it would
        # unhooked (probes/stray_modules.py tells it so), and its id may then name another.
        self.seen: dict[int, list[Any]] = {}
        # (class, name, line) -> [a weak reference to the first one's input, whether every module
        # called there since took that very tensor, the first's storage, whether every one's input
        # lay in it (slices of one tensor: a depthwise convolution's channels; not a stack of
        # layers, each on the last one's output)], told as they are called (it dies after)
        self.inputs: dict[tuple[str, str, str | None], list[Any]] = {}
        self.t = 0.0

    def pre(self, module: Any, args: Any, outer_shape: list[int] | None) -> None:
        e = self.seen.get(id(module))
        if e is None or e[0]() is not module:
            frame = user_frame()
            name = called_as(module, frame, subscripts=True) if frame is not None else None
            del frame
            e = self.seen[id(module)] = [weakref.ref(module), 0, caller_site() if name else None, name, 0.0,
                                         first_shape(args) if name else None, outer_shape]
            if name:
                self._same_input(type(module).__name__, name, e[2], args)
        if e[3] is None:
            return
        e[1] += 1
        if isinstance(module, self.cell_types):
            self.t = time.perf_counter()

    def post(self, module: Any) -> None:
        e = self.seen.get(id(module))
        if e is not None and self.t and isinstance(module, self.cell_types):
            e[4] += time.perf_counter() - self.t
            self.t = 0.0

    def cells(self, step_s: float) -> list[list[Any]] | None:
        """[class, the user's name for it, its line, calls, input size, hidden size, seconds in its
        forwards, the counted step's seconds] for each cell called CELL_CALLS_MIN times or more."""
        try:
            return self._cells(step_s)
        except Exception:
            return None  # (not known: the step's other records still go)

    def _cells(self, step_s: float) -> list[list[Any]] | None:
        out = []
        for ref, calls, site, name, spent, *_ in self.seen.values():
            module = ref()
            if module is None or not name:
                continue
            if calls >= CELL_CALLS_MIN and isinstance(module, self.cell_types):
                out.append([type(module).__name__, name, site, calls, int(getattr(module, "input_size", 0)),
                            int(getattr(module, "hidden_size", 0)), round(spent, 6), round(step_s, 6)])
        return out or None

    def repeated(self) -> list[list[Any]] | None:
        """[class, the user's name for it, its line, calls, its first input's shape, the outermost
        call's first input's shape] for each other module with parameters called INNER_CALLS_MIN
        times or more."""
        try:
            return self._repeated()
        except Exception:
            return None

    def _repeated(self) -> list[list[Any]] | None:
        out = []
        for ref, calls, site, name, _, shape, outer in self.seen.values():
            module = ref()
            if module is None or not name:
                continue
            if calls >= INNER_CALLS_MIN and not isinstance(module, self.cell_types) \
                    and next(module.parameters(), None) is not None:
                out.append([type(module).__name__, name, site, calls, shape, outer])
        return out or None

    def _same_input(self, cls: str, name: str, site: str | None, args: Any) -> None:
        first = next((a for a in args if hasattr(a, "shape")), None)
        storage = _storage(first)
        entry = self.inputs.get((cls, name, site))
        if entry is None:
            try:
                self.inputs[(cls, name, site)] = [weakref.ref(first) if first is not None else None, True,
                                                  storage, storage is not None]
            except TypeError:
                self.inputs[(cls, name, site)] = [None, False, None, False]
            return
        if entry[1]:
            entry[1] = entry[0] is not None and first is not None and entry[0]() is first
        entry[3] = entry[3] and storage is not None and storage == entry[2]

    def siblings(self) -> list[list[Any]] | None:
        """[class, the user's name for them, their line, modules, calls, the first's input shape,
        the outermost call's, 1 where all took the very same tensor, 1 where their parameters'
        shapes are all alike, the first's configuration, 1 where all inputs lay in one tensor's
        storage] for each class called on SIBLINGS_MIN or more modules from one line."""
        try:
            return self._siblings()
        except Exception:
            return None

    def _siblings(self) -> list[list[Any]] | None:
        groups: dict[tuple[str, str, str], list[list[Any]]] = {}
        for e in self.seen.values():
            module = e[0]()
            if module is None or not e[3] or next(module.parameters(), None) is None:
                continue
            groups.setdefault((type(module).__name__, e[3], e[2]), []).append([module, *e[1:]])
        out = []
        for (cls, name, site), members in groups.items():
            if len(members) < SIBLINGS_MIN:
                continue
            first = members[0]
            seen_in = self.inputs.get((cls, name, site), [None, False, None, False])
            same_input, one_storage = bool(seen_in[1]), bool(seen_in[3])
            shapes = [[tuple(p.shape) for p in m[0].parameters()] for m in members]
            config = {k: _plain(getattr(first[0], k)) for k in _CONFIG if hasattr(first[0], k)}
            out.append([cls, name, site, len(members), sum(int(m[1]) for m in members), first[5], first[6],
                        int(same_input), int(all(s == shapes[0] for s in shapes)), config, int(one_storage)])
        return out or None


def _storage(t: Any) -> int | None:
    """Where a tensor's storage starts (a view's is its base's); None for anything else."""
    try:
        return int(t.untyped_storage().data_ptr()) if t is not None else None
    except Exception:
        return None


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
