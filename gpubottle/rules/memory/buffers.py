"""Growth bounded by a buffer the script is filling: a deque with a maxlen grows until it is full and
then drops an item for each it adds, so the memory it drives levels off. The growth line, fitted
over a short run, is projected only until the buffer is full: memory that levels off below the
limit is no risk, said in a note; memory that reaches the limit first still is (measured: a DQN's
deque(maxlen=200000) of small transitions, 12 s in, "runs out in about 30 min"; its memory levels
off at 475 MB by 6,000 steps)."""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle.evidence import Evidence, FillingBuffer
from gpubottle.rules import thresholds as th
from gpubottle.units import duration, gib, pct


@dataclass
class Bounded:
    buffer: FillingBuffer
    items_per_s: float  # the pace it filled at (between two censuses, else since the run began)
    full_in_s: float  # from the run's end, at that pace
    level_bytes: float  # memory in use once it is full, the growth going on at its rate until then
    limit_bytes: int

    @property
    def fits(self) -> bool:
        return self.level_bytes < th.MEM_WARNING * self.limit_bytes


def bounded(ev: Evidence, bytes_per_s: float) -> Bounded | None:
    """The largest buffer still filling, and where memory levels off once it is full. None where
    none was filling, or what the censuses saw pile up is held elsewhere (a growth of its own: the
    tensors' holder, or a list of the script's whose items hold KEPT_MIN_SHARE of the rise)."""
    m = ev.memory
    if m is None or not m.buffers or not m.series or not m.limit_bytes or bytes_per_s <= 0:
        return None
    b = max(m.buffers, key=lambda x: x.items * x.item_bytes)
    leak = m.leak
    if leak is not None and leak.holder and leak.holder.split(" ")[0] != b.holder.split(" ")[0]:
        return None
    k = m.kept
    if (k is not None and k.holder != b.holder and k.seconds > 0
            and k.grown_bytes >= th.KEPT_MIN_SHARE * bytes_per_s * k.seconds):
        return None
    start, end = m.series[0][0], m.series[-1][0]
    pace = b.items_per_s or (b.items / (b.t - start) if b.t > start else 0.0)
    if pace <= 0:
        return None
    full_in = max(0.0, (b.maxlen - b.items) / pace - (end - b.t))
    used = (m.peak_used_fraction or 0.0) * m.limit_bytes
    return Bounded(b, pace, full_in, used + bytes_per_s * full_in, m.limit_bytes)


def _buffer(d: Bounded) -> str:
    b = d.buffer
    bound = (f", a cache by sample index of a dataset of {b.maxlen:,}," if b.by_dataset else
             f", which its class keeps below {b.capacity} = {b.maxlen:,}," if b.capacity else
             f" with maxlen={b.maxlen:,}")
    return f"{b.holder}{bound} held {b.items:,} items ({gib(b.item_bytes)} each)"


def note(d: Bounded, bytes_per_s: float) -> str:
    """Said where the bound keeps memory below the limit: no finding, but why none."""
    return (f"memory grew {gib(bytes_per_s * 60)}/min while a buffer filled: {_buffer(d)}; at its "
            f"pace it is full in about {duration(d.full_in_s)}, and with memory growing as it did "
            f"until then it levels off near {gib(d.level_bytes)} ({pct(d.level_bytes / d.limit_bytes)} "
            "of the limit): no exhaustion projected (a longer run shows the level)")


def fact(d: Bounded) -> str:
    """Said where memory reaches the limit before the buffer is full."""
    return (f"{_buffer(d)}: it is full in about {duration(d.full_in_s)} at its pace, after memory "
            "would run out at this rate; its bound does not save the run")
