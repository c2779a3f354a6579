"""py-spy's sampling schedule: each chunk's rate and length (the sampler itself, with a stand-in
for py-spy: tests/e2e/test_stack_sampler.py)."""

from __future__ import annotations

from gpubottle.collect.stacks import CHUNK_S, FIRST_MINUTE_CHUNKS, chunk_rate, chunk_seconds


def test_the_schedule_in_numbers():
    assert [chunk_rate(10, k) for k in range(6)] == [10, 2, 2, 2, 2, 2]
    assert [chunk_seconds(CHUNK_S, k) for k in (0, FIRST_MINUTE_CHUNKS - 1, FIRST_MINUTE_CHUNKS)] == [
        15.0, 15.0, 60.0]
    assert chunk_rate(1, 5) == 1  # never below one a second
