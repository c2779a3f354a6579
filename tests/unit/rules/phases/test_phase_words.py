"""The words for the run outside its training step: each sentence form once, from decisions built by
hand (the rule tests in test_account.py assert the decisions)."""

from __future__ import annotations

from gpubottle.evidence import LoaderInfo, PhaseEvidence, StepEvidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules.phases import words
from gpubottle.rules.phases.decide import Checkpoints, EvalContext, SaveLess, StartUp, nice


def test_checkpoint_words() -> None:
    d = Checkpoints(100.0, 20.0, 20, "torch.save", "train.py:50", 128 << 20, 2,
                    others=[("train.py:70", 1.5)], save_less=SaveLess(2, 100, 0.4, 80.4), big_state=True)
    assert words.checkpoint_summary(d) == ("saving checkpoints stops the training loop 20% of the run: "
                                           "20 saves of 128 MiB, 1000.0 ms each, every 2 steps")
    assert [f.text for f in words.checkpoint_facts(d)] == [
        "20 saves of 128 MiB with torch.save, 1000.0 ms each: 20.0 s of the run's 100.0 s",
        "writing at 128 MiB/s while the training loop waits for it",
        "a save every 2 training steps, on the loop's own thread",
        "also saved at train.py:70: 1.5 s"]
    less, background, smaller = words.checkpoint_fixes(d)
    assert less.change == {"save every (steps)": [2, 100]} and less.expected_run_s == 80.4
    assert less.expected == "checkpoints 20.0 s -> about 0.40 s; run 100.0 s -> about 80.4 s (1.2x)"
    assert background.text.startswith("try saving in the background")  # a try: may not help
    assert smaller.text.startswith("save only what resuming needs")
    d.state_bytes = 32 << 20  # the probes saw the model's weights and the optimizer's state in it
    assert words.checkpoint_facts(d)[2].text == ("of each save, 32 MiB is the model's weights and "
                                                 "the optimizer's state (what resuming needs)")
    assert words.checkpoint_fixes(d)[2].text.startswith(
        "each save holds 96 MiB beyond the model's weights and the optimizer's state (32 MiB): save "
        "only what resuming needs")
    d.every, d.save_less, d.big_state, d.bytes = None, None, False, None
    assert [f.text.split(":")[0] for f in words.checkpoint_fixes(d)] == ["try saving in the background"]
    assert words.checkpoint_summary(d).endswith("20 saves, 1000.0 ms each")


def test_save_intervals_are_round() -> None:
    assert [nice(n) for n in (3, 11, 22, 24, 26, 60, 101, 240)] == [5, 20, 25, 25, 50, 100, 200, 250]


def test_startup_words() -> None:
    d = StartUp(10.0, 6.0, {"import torch": 1.5, "Records.__init__": 2.4}, 2.4, "Records.__init__", 2.4,
                "data.py:12")
    # (the own work's share beside it: the finding's share of the run, which the verdict line shows)
    assert words.startup_summary(d) == ("start-up takes 60% of the run, 2.4 s of it (24% of the run) the "
                                        "script's own work before its first batch: most in "
                                        "Records.__init__ (data.py:12)")
    assert words.startup_facts(d)[0].text == ("start-up takes 6.0 s of the run's 10.0 s before the first "
                                              "batch: Records.__init__ 2.4 s, import torch 1.5 s")
    (fix,) = words.startup_fixes(d)
    assert fix.where == "data.py:12" and fix.text.startswith("Records.__init__ (data.py:12) takes 2.4 s "
                                                             "before the first batch: try computing it once")
    d.top, d.site = "import transformers", None
    (fix,) = words.startup_fixes(d)
    assert fix.text.startswith("import transformers takes 2.4 s: import it where it is used")



def test_compiling_at_start_up_is_weighed_against_the_run_and_never_cached_by_hand() -> None:
    """torch.compile's 3.6 s before 30 steps of 0.10 s were offered "torch.save the tensors it
    builds": the advice for a dataset's own start-up work."""
    d = StartUp(9.1, 7.5, {"compiling (torch.compile)": 3.6, "import torch": 1.4}, 3.6,
                "compiling (torch.compile)", 3.6, "train.py:11", compiled_at="train.py:5", train_s=0.1,
                train_steps=30)
    (fix,) = words.startup_fixes(d)
    assert fix.where == "train.py:5"
    assert fix.text.startswith("compiling (torch.compile at train.py:5) takes 3.6 s before the first "
                               "batch, against 0.10 s for the 30 training steps after it")
    assert "TORCH_COMPILE_DISABLE=1" in fix.text and "torch.save" not in fix.text


def test_a_recompile_for_new_shapes_is_said_with_its_function_and_padding() -> None:
    """A compiled encoder fed 7 sequence lengths: dynamo compiled its forward again for the second
    length (automatic dynamic shapes), ~12 s of a 42-s cold run; padded to one length 29 s."""
    from gpubottle.evidence import Recompiled

    reason = "tensor 'ids' size mismatch at index 1. expected 16, actual 24"
    d = StartUp(41.6, 37.5, {"compiling (torch.compile)": 30.1}, 30.1, "compiling (torch.compile)", 30.1,
                "enc.py:29", compiled_at="enc.py:23", train_s=2.6, train_steps=120,
                recompiled=[Recompiled("Enc.forward", "enc.py:19", 1, reason)])
    (fix,) = words.startup_fixes(d)
    assert "It compiled Enc.forward (enc.py:19) again once, as a guard failed" in fix.text
    assert reason in fix.text and "Pad them to one length" in fix.text and "29 s" in fix.text
    # A guard on something else (a global's value): said, with no shape advice
    d.recompiled = [Recompiled("step", "train.py:40", 3, "L['lr'] == 0.001")]
    (fix,) = words.startup_fixes(d)
    assert "again 3 times" in fix.text and "Pad them" not in fix.text


def test_an_evaluation_loaders_finding_said_for_the_run() -> None:
    lo = LoaderInfo(id=2, site="train.py:30", num_workers=0, persistent_workers=False)
    ph = PhaseEvidence(phase="eval", loader=lo, seconds=40.0, passes=4, every_steps=50,
                       steps=StepEvidence(source="dataloader", durations_s=[0.1] * 400,
                                          input_wait_s=[0.08] * 400))
    c = EvalContext(ph, lo, 100.0, 32.0)
    inner = Finding("data-starved", "critical", 0.8, "the loop waits for data 80% of the time",
                    [Fact("inner fact")], [Fix(text="num_workers=2", where="train.py:30",
                                                change={"num_workers": [0, 2]}, expected="step ...",
                                                expected_step_s=0.03)])
    f = words.eval_finding(inner, c, "critical")
    assert f.summary == ("evaluation takes 40% of the run (4 passes of the DataLoader at train.py:30, every "
                         "50 training steps), and there the loop waits for data 80% of the time")
    assert (f.phase, f.run_share, f.evidence[0].name, f.evidence[1].text) == ("eval", 0.32, "eval_share",
                                                                             "inner fact")
    workers, fewer = f.fixes
    assert workers.change == {"num_workers": [0, 2], "persistent_workers": [False, True]}
    assert workers.text.endswith("so they start once, not for each of the 4 passes")
    assert workers.expected_step_s is None and workers.expected_run_s == 72.0  # 100 - 40 + 400 * 0.03
    assert workers.expected == "evaluation 40.0 s -> about 12.0 s; run 100.0 s -> about 72.0 s (1.4x)"
    assert fewer.text.startswith("evaluate less often: each pass costs 10.0 s; every 100 training steps")
    assert inner.fixes[0].change == {"num_workers": [0, 2]}  # the input rules' own finding is left as is


def test_passes_over_the_training_loader_are_said_as_the_training_set_measured_again() -> None:
    """accuracy(model, train_loader) each epoch: the evaluation's loader is the training's own;
    the first fix says these passes read the training set again, at the passes' own loop."""
    lo = LoaderInfo(id=1, site="train.py:30", num_workers=2, persistent_workers=True,
                    iter_site="train.py:24")
    ph = PhaseEvidence(phase="eval", loader=lo, seconds=2.4, passes=4, every_steps=32,
                       steps=StepEvidence(source="dataloader", durations_s=[0.0185] * 128,
                                          input_wait_s=[0.0175] * 128))
    inner = Finding("data-starved", "critical", 0.95, "the loop waits for data 95% of the time", [], [])
    f = words.eval_finding(inner, EvalContext(ph, lo, 10.6, 2.2), "warning", True)
    assert "4 passes of the training's own DataLoader at train.py:30" in f.summary
    again = f.fixes[0]
    assert again.text.startswith("these passes read the training set again, under no_grad")
    assert again.where == "train.py:24" and not again.change and again.expected is None
    assert not words.eval_finding(inner, EvalContext(ph, lo, 10.6, 2.2), "warning").fixes[0].text.startswith(
        "these passes")


def test_a_step_fix_promises_the_run_too() -> None:
    fix = Fix(text="x", expected="step 100.0 ms -> about 50.0 ms (2.0x)", expected_step_s=0.05)
    got = words.on_the_run_fix(fix, 60.0, 0.1, 400)
    assert got.expected_run_s == 40.0 and got.expected.endswith("; run 60.0 s -> about 40.0 s (1.5x)")
    assert words.on_the_run_fix(Fix(text="y"), 60.0, 0.1, 400) == Fix(text="y")
