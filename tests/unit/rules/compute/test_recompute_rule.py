"""compute-bound where activation checkpointing is on, from made-up evidence shaped like a measured
run (six residual MLP blocks of 256 under checkpoint(), batch 128: the checkpointed forwards 21% of
a 43.8 ms step; without checkpointing 42.3 -> 33.4 ms): turning it off leads, with the step it
would take and the memory it trades, before faster math; not below the share that counts; on a GPU
(the forwards' time there is the host's launching) a try without a number."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import CheckpointRecompute, MemoryEvidence
from gpubottle.rules import diagnose
from gpubottle.rules.thresholds import CHECKPOINT_RECOMPUTE_SHARE

GIB = 1 << 30


def _recompute(**kw: object) -> CheckpointRecompute:
    args: dict[str, object] = dict(share=0.21, per_step_s=0.0092, calls=6, steps=20,
                                   site="train.py:35", via=None, blocks=["Block"])
    args.update(kw)
    return CheckpointRecompute(**args)  # type: ignore[arg-type]


def _finding(r: CheckpointRecompute):
    ev = evidence(steps=190, step_s=0.0438, main=1.98, cores=2.0,
                  memory=MemoryEvidence(samples=20, peak_tree_bytes=GIB // 2, limit_bytes=16 * GIB))
    ev.recompute = r
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f


def test_turning_checkpointing_off_leads_with_the_step_it_would_take() -> None:
    f = _finding(_recompute())
    assert f.summary.endswith("and 21% of it is the forwards its backward runs again for activation "
                              "checkpointing (6 checkpoint() calls a step)"), f.summary
    first = f.fixes[0]
    assert first.text.startswith("activation checkpointing is on: each step's backward runs the forward "
                                 "of its 6 checkpointed Block calls again (checkpoint(...) called at "
                                 "train.py:35), 9.2 ms of each 43.8 ms step (21%)"), first.text
    assert "`block(x)` in place of `checkpoint(block, x, ...)`" in first.text
    assert "the step would take about 34.6 ms" in first.text
    assert "peak memory rises (the run's peak here: 512 MiB of 16.00 GiB); try it and watch memory" \
        in first.text, first.text
    assert first.where == "train.py:35" and abs(first.expected_step_s - 0.0438 * 0.79) < 1e-6
    assert "torch.compile" in f.fixes[1].text


def test_a_library_s_checkpointing_is_turned_off_in_its_settings() -> None:
    first = _finding(_recompute(via="transformers.modeling_utils.PreTrainedModel.forward",
                                blocks=["GPT2Block"])).fixes[0]
    assert "its 6 checkpointed GPT2Block calls again" in first.text, first.text
    assert "through transformers.modeling_utils" in first.text
    assert "gradient_checkpointing=False in its TrainingArguments" in first.text


def test_not_said_below_the_share_that_counts() -> None:
    f = _finding(_recompute(share=CHECKPOINT_RECOMPUTE_SHARE / 2))
    assert not any("checkpointing" in x.text for x in f.fixes) and "checkpointing" not in f.summary


def test_checkpoint_sequential_is_undone_by_calling_the_model() -> None:
    first = _finding(_recompute(calls=3, blocks=["checkpoint_sequential"])).fixes[0]
    assert "its 3 checkpoint_sequential segments again (checkpoint_sequential(...) called at " \
           "train.py:35)" in first.text, first.text
    assert "`model(x)` in place of `checkpoint_sequential(model, segments, x)`" in first.text
