"""rules/post/one_value.py: one value for each setting at each line across the report's findings."""

from __future__ import annotations

from gpubottle.report import Finding, Fix
from gpubottle.rules.post.one_value import one_value_per_setting


def _workers(n: int, where: str = "train.py:34") -> Fix:
    return Fix(text=f"load batches in parallel: num_workers={n}", where=where,
               change={"num_workers": [2, n]}, expected_step_s=0.004)


def test_a_later_findings_change_to_the_same_setting_points_at_the_first() -> None:
    train = Finding("data-starved", "critical", 0.85, "the loop waits", fixes=[_workers(11)])
    again = Fix(text="these passes read the training set again", where="train.py:26")
    ev = Finding("data-starved", "info", 0.96, "evaluation takes 14%", phase="eval",
                 fixes=[again, _workers(21)])
    out = one_value_per_setting([train, ev])
    assert out[0] is train
    assert out[1].fixes[0] is again
    [pointer] = out[1].fixes[1:]
    assert pointer.change == {} and pointer.where == "train.py:34"
    assert "num_workers=11, for the training steps" in pointer.text
    # The evaluation first (it costs the run more): its value is the one kept.
    out = one_value_per_setting([ev, train])
    assert out[0] is ev and "num_workers=21, for the evaluation" in out[1].fixes[0].text


def test_other_lines_other_settings_and_one_findings_own_fixes_are_left_alone() -> None:
    a = Finding("data-starved", "critical", 0.8, "a", fixes=[_workers(4), _workers(8)])
    b = Finding("data-starved", "info", 0.5, "b", phase="eval",
                fixes=[_workers(6, where="eval.py:9"),
                       Fix(text="pin", where="train.py:34", change={"pin_memory": [False, True]})])
    assert one_value_per_setting([a, b]) == [a, b]
