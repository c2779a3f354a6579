"""Activation checkpointing's share of the steps from the probe's window record (analysis/
recompute.py): the checkpointed forwards' seconds over the steps' seconds, a block of steps run
without hooks (one row for several steps) weighed by its time."""

from __future__ import annotations

from gpubottle.analysis.recompute import checkpoint_recompute
from gpubottle.collect.events import ChildEvents
from gpubottle.wire import Checkpointed


def _events(rows: list[list[float]]) -> ChildEvents:
    ev = ChildEvents()
    ev.add(Checkpointed(rows, "train.py:35", None, ["Block", "Head"]))
    return ev


def test_the_share_is_the_blocks_seconds_over_the_steps_seconds() -> None:
    r = checkpoint_recompute(_events([[0.04, 0.01, 6], [0.04, 0.01, 6], [0.12, 0.02, 18]]))
    assert r is not None
    assert r.share == round(0.04 / 0.2, 4) and r.per_step_s == 0.01 and r.calls == 6 and r.steps == 3
    assert r.site == "train.py:35" and r.blocks == ["Block", "Head"] and r.via is None


def test_no_record_or_no_time_is_no_evidence() -> None:
    assert checkpoint_recompute(ChildEvents()) is None
    assert checkpoint_recompute(_events([])) is None
    assert checkpoint_recompute(_events([[0.0, 0.0, 0]])) is None
