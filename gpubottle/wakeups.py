"""When gpubottle's periodic threads wake: on one grid of the monotonic clock, together.

Every wakeup of one of its threads on a machine whose cores the training keeps busy takes a core
from a training thread, and torch's other pool threads then wait for that one at their next
barrier. Measured beside benchmarks/busy_loop.py on 2 cores (4 interleaved 20-s rounds each): three
threads each waking 60 times a second cost the loop 3.0% when they woke at one instant and 5.4%
when their wakeups were spread apart. So the process-tree sampler, the worker watch and the
script's event flush (CLOCK_MONOTONIC is the same clock in every process) wake on multiples of
their periods, and a slower one's instants are a faster one's too.
"""

from __future__ import annotations

import math

SLACK = 0.25  # of a period: a wake this much early (or late) is that instant's, not the next's


def next_on_grid(now: float, period: float) -> float:
    """The first multiple of `period` after `now` that is more than SLACK of a period away."""
    return (math.floor(now / period + SLACK) + 1) * period
