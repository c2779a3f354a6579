"""A loop waiting on a queue for a producer's batches (no DataLoader): data-starved at the line it
waits at, with the producer's own line where it was sampled, and never compute-bound; the fix is a
try with no number (a second producer measured no faster on 2 cores, numpy arrays 1.25x)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, StackEvidence
from gpubottle.rules import diagnose
from gpubottle.rules.compute.decide import decide_compute
from gpubottle.rules.input.producer import decide_producer_wait, producer_wait


def _ev(wait: float | None, samples: int = 24, producer: bool = True) -> Evidence:
    ev = evidence(step_s=0.0065, main=0.2, tree=1.15, cores=2, loader=False)
    ev.stacks = StackEvidence(samples_main=samples, main_phases={"backward": 0.04, "other": 0.96},
                              main_wait_share=wait, main_wait_site="train.py:19",
                              main_wait_statement="item = q.get()", main_wait_from_process=True)
    if producer:
        ev.stacks.producer_samples, ev.stacks.producer_busy = 35, 1.0
        ev.stacks.producer_hot, ev.stacks.producer_hot_site, ev.stacks.producer_hot_share = (
            "produce", "train.py:9", 0.88)
    return ev


def test_a_loop_waiting_on_its_producer_is_data_starved_at_the_wait_with_the_producers_line() -> None:
    ev = _ev(0.96)
    (f,) = producer_wait(ev, ev.measured())  # type: ignore[arg-type]
    assert f.category == v.DATA_STARVED and f.severity == "critical" and f.share == 0.96
    assert "`item = q.get()` (train.py:19)" in f.evidence[0].text
    assert "produce (train.py:9)" in f.evidence[1].text
    (fix,) = f.fixes
    assert fix.text.startswith("try: ") and fix.where == "train.py:9" and fix.expected is None
    assert "round trip to the process that made them" in fix.text and "GIL" not in fix.text
    assert decide_compute(ev) is None  # the input rules speak for it
    assert diagnose(ev).primary == v.DATA_STARVED
    # Unsampled producer: the wait's line is where to look.
    thread = _ev(0.96, producer=False)
    thread.stacks.main_wait_from_process = False  # type: ignore[union-attr]
    (f,) = producer_wait(thread, ev.measured())  # type: ignore[arg-type]
    assert f.fixes[0].where == "train.py:19" and len(f.evidence) == 1
    assert "shares the loop's GIL" in f.fixes[0].text and "round trip" not in f.fixes[0].text


def test_a_small_wait_or_too_few_samples_says_nothing() -> None:
    for ev in (_ev(0.03), _ev(0.96, samples=10), _ev(None)):
        assert decide_producer_wait(ev, ev.measured()) is None  # type: ignore[arg-type]
