"""What this machine's CPU does that a test's expectation depends on, measured here."""

from __future__ import annotations

import functools
import time


@functools.lru_cache(maxsize=1)
def subnormal_penalty() -> float:
    """How much slower an elementwise op runs on subnormal float32 values than on normal ones, on
    this CPU (one thread): ~1.5-10x on the Intel hosts these tests were written on, none on an AMD
    EPYC host (0.7x). Where there is none, steps do not slow when values turn subnormal, and
    subnormal-math rightly says nothing of them."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        times = []
        for value in (1.0, 1e-39):
            x, y = torch.full((1 << 18,), value), torch.full((1 << 18,), 0.9)
            x.mul(y)
            t = time.perf_counter()
            for _ in range(40):
                x.mul(y)
            times.append(time.perf_counter() - t)
        return times[1] / times[0]
    finally:
        torch.set_num_threads(threads)


SUBNORMAL_SLOW = 1.5  # a penalty from this ratio: the steps of dead_units.py slow by a share that counts
