"""A process the script started for itself (a logger's uploader compressing logs, forked from the
main process) busy beside the training: named as cpu-contention with its busiest line, never taken
for a DataLoader worker, and not said where the loop waits for it (a producer: its input)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import StackEvidence
from gpubottle.rules import diagnose


def _ev(own: float, waits: float | None = None):
    ev = evidence(steps=72, step_s=0.024, wait_s=0.008, num_workers=2, per_worker=0.06, cores=2,
                  tree=1.8, main=0.84)
    ev.cpu.other_children_cores = own
    ev.stacks = StackEvidence(samples_main=60, producer_samples=40, producer_busy=1.0,
                              producer_hot="uploader", producer_hot_site="train.py:16",
                              producer_hot_share=0.95, main_wait_share=waits)
    return ev


def _contention(ev):
    return next((f for f in diagnose(ev).findings if f.category == v.CPU_CONTENTION), None)


def test_a_busy_side_process_is_named_with_its_line():
    f = _contention(_ev(0.85))
    assert f is not None and f.severity == "warning"
    assert "the script's own side processes use the cores" in f.summary
    assert any("use 0.85 of the 2 cores, busiest in uploader (train.py:16)" in e.text for e in f.evidence)
    [fix] = f.fixes
    assert fix.where == "train.py:16" and fix.text.startswith("uploader runs beside the training")


def test_a_quiet_one_or_a_producer_the_loop_waits_for_is_not():
    assert _contention(_ev(0.2)) is None
    assert _contention(_ev(0.85, waits=0.6)) is None
