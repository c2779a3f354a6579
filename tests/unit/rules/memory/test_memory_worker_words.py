"""What is said of workers holding copies of the dataset: each sentence form once, from decisions
built by hand (test_worker_memory.py asserts the decisions)."""

from __future__ import annotations

from gpubottle.rules.memory import worker_words as words
from gpubottle.rules.memory.workers import GrowingCopies, HeldCopies, SpawnedCopies

GIB = 1 << 30
MIB = 1 << 20


def test_spawned_copies() -> None:
    d = SpawnedCopies(4, "spawn", 900 * MIB, 700 * MIB, GIB, 4 * GIB, 16 * GIB, "info", "data.py:10")
    assert words.reason(d) == "each spawned DataLoader worker holds its own copy of the dataset (4 x 700 MiB)"
    copies, more = words.facts(d)
    assert copies.text == ("each of the 4 DataLoader workers (spawn) holds 900 MiB of its own, about 700 MiB "
                           "more than a spawned worker that loads nothing: it unpickled its own copy of "
                           "the dataset; 2.73 GiB across them, the run's peak 4.00 GiB of 16.00 GiB")
    assert more.text == "with 8 workers it would need about 6.47 GiB; each worker adds 700 MiB"
    fix = words.fix(d)
    assert fix.text.startswith("every spawned worker loads the dataset again") and fix.where == "data.py:10"
    d.start_method, d.limit_bytes = "forkserver", 0
    assert words.reason(d).startswith("each forkserver-started DataLoader worker")
    assert len(words.facts(d)) == 1  # no limit: no projection


def test_copies_growing_as_the_workers_read() -> None:
    d = GrowingCopies(4, 50 * MIB, 0.98, 2 * GIB, GIB, GIB, "critical", "data.py:10", exhaustion_s=41.0)
    assert words.reason(d) == "the DataLoader workers copy the dataset and run memory out in about 41 s"
    grows, bound = words.facts(d)
    assert grows.name == "workers_growth_bytes_per_s" and grows.text.startswith(
        "the 4 DataLoader workers' own memory grows by 2.93 GiB/min (R^2 0.98)")
    assert bound.text == ("it stops only when each worker holds a copy: about 4 x 1.00 GiB = 4.00 GiB, "
                          "more than the 2.00 GiB available: memory runs out in about 41 s")
    d.exhaustion_s, d.severity, d.available_bytes = None, "warning", 8 * GIB
    assert words.reason(d) == "the DataLoader workers copy the dataset as they read it (+2.93 GiB/min)"
    assert words.facts(d)[1].text == ("it stops when each worker holds a copy: about 4 x 1.00 GiB = "
                                      "4.00 GiB, reached in about 61 s; 8.00 GiB was available")
    d.private_bytes = 4 * GIB
    assert "already reached" in words.facts(d)[1].text
    assert words.fix(d).text.startswith("store the dataset as one numpy array or torch tensor")


def test_copies_already_held() -> None:
    d = HeldCopies(4, 700 * MIB, GIB, "data.py:10")
    assert words.reason(d) == "the forked DataLoader workers hold copies of the dataset (4 x 700 MiB)"
    (held,) = words.facts(d)
    assert held.text.startswith("each of the 4 forked DataLoader workers holds 700 MiB of its own, 68% of "
                                "the 1.00 GiB the main process held before they started")
    assert words.fix(d).text.endswith("instead of holding 4 copies")
