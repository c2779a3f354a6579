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
        pairs = [(torch.full((1 << 16,), value), torch.full((1 << 16,), 0.9)) for value in (1.0, 1e-39)]
        best = [float("inf"), float("inf")]
        for _ in range(9):  # interleaved rounds, the best of each: other programs only add time
            for i, (x, y) in enumerate(pairs):
                t = time.perf_counter()
                for _ in range(10):
                    x.mul(y)
                best[i] = min(best[i], time.perf_counter() - t)
        return best[1] / best[0]
    finally:
        torch.set_num_threads(threads)


SUBNORMAL_SLOW = 1.5  # a penalty from this ratio: the steps of dead_units.py slow by a share that counts
