"""replayed-batches from made-up evidence shaped like a measured run (/tmp's cycle.py, 2 cores: a
3000-image loader of 3x64x64 floats, batch 32, 2 workers, under itertools.cycle: one pass of 94
batches, 601 steps, 1.5 MB a batch; the report read compute-bound and nothing else)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.rules import diagnose


def _ev(steps: int = 601, cycled: bool = True, iterators: int = 1, ended: bool = True) -> Evidence:
    ev = evidence(steps=steps, step_s=0.0044, wait_s=0.0004, num_workers=2, per_worker=0.1, cores=2)
    lo = ev.loaders[0]
    lo.iter_cycled, lo.iterators, lo.iter_site = cycled, iterators, "train.py:13"
    lo.batches, lo.epoch_batches, lo.epoch_wait_s = 94, [94] if ended else [], [0.0026] if ended else []
    lo.batch_bytes, lo.dataset_len, lo.sampler = 1_573_120, 3000, "RandomSampler"
    return ev


def _replayed(ev: Evidence) -> list:
    return [f for f in diagnose(ev).findings if f.category == v.REPLAYED_BATCHES]


def test_a_cycled_loader_whose_pass_ended_is_said_with_its_replays_and_what_it_holds() -> None:
    [f] = _replayed(_ev())
    assert f.severity == "warning"
    assert f.summary.startswith("itertools.cycle(loader) at train.py:13 replays the loader's first "
                                "pass: 507 of the loop's 601 steps (84%) trained again"), f.summary
    assert "shuffle=True shuffles the loader's passes" in f.summary
    assert "holds all 94 of them, about 141 MiB, for the rest of the run" in f.summary
    assert any("one pass of 94 batches (3000 samples)" in x.text for x in f.evidence)
    [fix] = f.fixes
    assert fix.where == "train.py:13" and "while True: yield from loader" in fix.text
    assert "persistent_workers=True" in fix.text and "244.4 ms of waits over its 94 batches" in fix.text
    assert fix.expected is None  # (new batches each pass cost their loading: no speed promised)


def test_not_said_without_cycle_a_second_iterator_a_pass_still_running_or_few_replays() -> None:
    for ev in (_ev(cycled=False), _ev(iterators=2), _ev(ended=False), _ev(steps=140)):
        assert _replayed(ev) == []
    assert _replayed(_ev(steps=141))  # half a pass replayed
