"""py-spy's sampling schedule: each chunk's rate and length (the sampler itself, with a stand-in
for py-spy: tests/e2e/test_stack_sampler.py)."""

from __future__ import annotations

from gpubottle.collect.stacks import CHUNK_S, FIRST_MINUTE_CHUNKS, chunk_rate, chunk_seconds


def test_the_schedule_in_numbers():
    assert [chunk_rate(10, k) for k in range(6)] == [10, 2, 2, 2, 2, 2]
    assert [chunk_seconds(CHUNK_S, k) for k in (0, FIRST_MINUTE_CHUNKS - 1, FIRST_MINUTE_CHUNKS)] == [
        15.0, 15.0, 60.0]
    assert chunk_rate(1, 5) == 1  # never below one a second


class _Py_spy:
    """A running py-spy as check_budget sees it: this process's pid (its CPU, read from /proc, is
    well past a thousandth of a core), and the Ctrl-C it would be sent."""

    def __init__(self) -> None:
        import os

        self.pid = os.getpid()
        self.signals: list[int] = []

    def poll(self) -> None:
        return None

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)


def test_a_chunk_past_the_budget_is_ended_but_not_the_rest_that_follows_it():
    """The live look ends a chunk past the budget; the chunk that runs the rest of it at the lowered
    rate is not ended again (each py-spy start costs 15-70 ms of CPU, itself read as over the budget
    at the rest's first look: on 17 threads the first 15 s restarted every ~4 s)."""
    import signal
    import time
    from types import SimpleNamespace

    from gpubottle.collect.budget import CpuBudget
    from gpubottle.collect.stacks import LIVE_MIN_S, _ProcessStacks

    now = time.monotonic()
    for rest, ended in ((False, True), (True, False)):
        owner = SimpleNamespace(budget=CpuBudget(cores=0.001, started=now - 100.0))
        chunk = _ProcessStacks(owner, 1, 10, 0.0)  # type: ignore[arg-type]
        spy = _Py_spy()
        chunk.proc = spy  # type: ignore[assignment]
        chunk.chunk_t0, chunk.chunk_end, chunk.rest = now - LIVE_MIN_S - 1.0, now + 10.0, rest
        chunk.check_budget(now)
        assert chunk.cut is ended and spy.signals == ([signal.SIGINT] if ended else []), rest
