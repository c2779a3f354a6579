"""The account's phase names: an inference loop's steps (no backward, no optimizer) are said as
inference, in the terminal and the HTML alike."""

from __future__ import annotations

import io

from rich.console import Console

from gpubottle.evidence import AccountEntry
from gpubottle.evidence.account import INFERENCE
from gpubottle.render.account import phase_label, render_account


def _entry(what: str | None) -> AccountEntry:
    return AccountEntry(phase="train", seconds=6.2, share=0.73, count=63, what=what,
                        parts={"input": 5.8, "forward and other code": 0.39})


def test_an_inference_loop_is_not_called_training():
    assert phase_label(_entry(INFERENCE)) == "inference"
    assert phase_label(_entry(None)) == "training"
    out = io.StringIO()
    render_account(Console(file=out, width=80), [_entry(INFERENCE)])
    assert "  inference        6.2 s  73%  63 steps: input 5.8 s" in out.getvalue()


def test_steps_whose_parts_are_all_too_small_to_name_end_without_a_colon():
    """20 steps of 0.2 ms (a script that raised at its 21st): no part reaches the floor."""
    from gpubottle.render.account import detail

    tiny = AccountEntry(phase="train", seconds=0.01, share=0.003, count=20, parts={"backward": 0.001})
    assert detail(tiny) == "20 steps"
    assert detail(_entry(None)) == "63 steps: input 5.8 s, forward and other code 0.39 s"
