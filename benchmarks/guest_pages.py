"""Free pages kept in the guest for a bench's series (bench_heavy.py --hold-guest-pages).

In a VM whose kernel reports free pages to the host (the page_reporting module, as under
firecracker here), a page freed goes back to the host within seconds, and touching it afresh then
costs ~7 us in the host against ~0.8 us for one the guest kept: the memory case's two runs drew
from the 0.2-1.4 GB not yet given back, a lottery per round that moved its cost -5.3% .. +4.4% a
round (2026-12-03, 24 rounds). With reporting off for the series and the free memory touched once
at its start, every page a run takes is one the guest kept, as on a machine of its own: the same
case, 8 rounds, moved -1.1% .. +1.7% (2 GB grown again 6 s after its free: 2.7 s with reporting,
0.47 s without). The order the module reports from is set past the largest the buddy allocator
has, so nothing qualifies, and put back when the series ends. On a machine without the module
(no VM, or one that does not report) this does nothing and says so.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

ORDER = Path("/sys/module/page_reporting/parameters/page_reporting_order")
BLOCK = 1 << 26  # touched 64 MB at a time
# Touch most of what is available, in a child so the bench's own heap keeps none of it; a page
# at a time is what a run's growth does, and what makes the guest own each page again.
_TOUCH = f"""
import mmap, psutil
size = int(psutil.virtual_memory().available * 0.85) // {BLOCK} * {BLOCK}
m = mmap.mmap(-1, size)
block = b"\\1" * {BLOCK}
for off in range(0, size, {BLOCK}):
    m[off:off + {BLOCK}] = block
m.close()
print(size >> 20)
"""


def _orders() -> int:
    """How many block orders the buddy allocator keeps (/proc/buddyinfo's columns after
    'Node 0, zone Normal'): a reporting order of this many reports nothing."""
    lines = Path("/proc/buddyinfo").read_text().splitlines()
    return max(len(line.split()) - 4 for line in lines)


@contextlib.contextmanager
def held_guest_pages(log: Callable[[str], None]) -> Iterator[bool]:
    """Free page reporting off (and the free memory touched once) for the block; True where it
    was turned off, False where there is nothing to turn off or no right to."""
    try:
        before = ORDER.read_text().strip()
        off = str(_orders())
        ORDER.write_text(off)
        held = ORDER.read_text().strip() == off
    except OSError as exc:
        log(f"  free page reporting left as it is ({exc.strerror or exc}: {ORDER})")
        yield False
        return
    try:
        if held:
            out = subprocess.run([sys.executable, "-c", _TOUCH], capture_output=True, text=True)
            log(f"  free page reporting off for the series (page_reporting_order {before} -> {off});"
                f" {out.stdout.strip() or '?'} MB of free memory touched once")
        else:
            log(f"  free page reporting: the kernel kept its order at {ORDER.read_text().strip()}")
        yield held
    finally:
        with contextlib.suppress(OSError):
            ORDER.write_text(before)
            log(f"  free page reporting back on (page_reporting_order {before})")

