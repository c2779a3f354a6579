"""How sizes are written (units.py): every report speaks with these."""

from __future__ import annotations

from gpubottle.units import gib


def test_sizes_keep_their_digits_from_bytes_to_gib():
    assert gib(3.5 * (1 << 30)) == "3.50 GiB" and gib(1 << 30) == "1.00 GiB"
    assert gib(696 * (1 << 20)) == "696 MiB" and gib(1 << 20) == "1 MiB" and gib(1 << 19) == "512 KiB"
    # A small model's checkpoint (24 KiB) read "0 MiB"; a growth of minus that, "-0 MiB".
    assert gib(24 * 1024) == "24 KiB" and gib(-24 * 1024) == "-24 KiB"
    assert gib(300) == "300 bytes" and gib(0) == "0 MiB"
