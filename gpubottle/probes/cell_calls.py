"""An RNN cell (nn.LSTMCell, nn.GRUCell, nn.RNNCell) called many times in one training step: a
Python loop over the time steps (`for t in range(T): h, c = self.cell(x[:, t], (h, c))`). Each
call is a few small matrix products and an autograd node; nn.LSTM over the whole sequence does the
same math in one call. Measured here (an LSTMCell of 128 over 64 steps, batch 32, forward and
backward): 33 ms as the loop, 12 ms as nn.LSTM.

Counted in model_calls.py's counted step (its module hooks see every call, inner ones too): each
cell's calls, the user's line that calls it and its name there (`self.cell`), its sizes, and the
time inside its forwards (backward runs in C, beyond any hook). Whether the loop could be one call
(each step's input read from a sequence made before it, not from the last step's output) is read
from that line's source by the analysis (analysis/cell_loop.py)."""

from __future__ import annotations

import time
from typing import Any

from gpubottle.probes.sites import called_as, caller_site, user_frame

CELL_CALLS_MIN = 8  # calls of one cell in the counted step, recorded from


class CellCalls:
    def __init__(self) -> None:
        from torch import nn

        self.types: tuple[type, ...] = (nn.RNNCellBase,)
        self.seen: dict[int, list[Any]] = {}  # id -> [module, calls, site, name, seconds in forward]
        self.t = 0.0

    def pre(self, module: Any) -> None:
        e = self.seen.get(id(module))
        if e is None:
            frame = user_frame()
            name = called_as(module, frame) if frame is not None else None
            del frame
            e = self.seen[id(module)] = [module, 0, caller_site(), name, 0.0]
        e[1] += 1
        self.t = time.perf_counter()

    def post(self, module: Any) -> None:
        e = self.seen.get(id(module))
        if e is not None and self.t:
            e[4] += time.perf_counter() - self.t
            self.t = 0.0

    def record(self, step_s: float) -> list[list[Any]] | None:
        """[class, the user's name for it, its line, calls, input size, hidden size, seconds in its
        forwards, the counted step's seconds] for each cell called CELL_CALLS_MIN times or more."""
        out = []
        for module, calls, site, name, spent in self.seen.values():
            if calls >= CELL_CALLS_MIN:
                out.append([type(module).__name__, name, site, calls, int(getattr(module, "input_size", 0)),
                            int(getattr(module, "hidden_size", 0)), round(spent, 6), round(step_s, 6)])
        return out or None
