"""The run's account from events on a made-up clock: evaluation passes and checkpoints carved out of
the steps, every second of the run in exactly one phase, and the rules that speak for the run."""

from __future__ import annotations

import io

import pytest
from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.analysis.account import run_account
from gpubottle.analysis.evaluation import eval_phases
from gpubottle.analysis.loaders import loader_infos
from gpubottle.analysis.own_cost import collectors_s
from gpubottle.analysis.phases import carve, loader_passes
from gpubottle.analysis.samples import Samples
from gpubottle.analysis.steps import step_evidence
from gpubottle.collect.events import ChildEvents
from gpubottle.collect.system import CoreBudget
from gpubottle.evidence import AccountEntry, CpuEvidence
from gpubottle.render.account import render_account
from gpubottle.rules import diagnose
from gpubottle.rules.phases import checkpoint_findings, startup_findings
from gpubottle.rules.phases.decide import decide_checkpoints, decide_startup
from gpubottle.wire import (
    Backward,
    Batch,
    End,
    IterStarted,
    LoaderBuilt,
    ModeSet,
    OptimizerStep,
    OutsideSample,
    OwnSample,
    Perturbed,
    ProbeCost,
    Saved,
    Start,
    TorchInfo,
)

LAUNCH, START = 100.0, 100.05


def _run(steps: int = 40, eval_every: int = 10, eval_batches: int = 5, save_every: int = 0,
         step_s: float = 0.02, eval_batch_s: float = 0.05, grad: int = 0,
         data_files: int = 0, mode_eval_every: int = 0, warm_s: float = 0.0, prepass: int = 0,
         paused: tuple[int, float, float] | None = None) -> tuple[ChildEvents, dict]:
    """A script: start-up (writing `data_files` samples with torch.save; a pass of `prepass`
    batches of 50 ms over the training loader, ending where training starts), then `steps` training
    steps (fetch 5 ms, backward, optimizer; the first three `warm_s` longer), an evaluation pass
    of loader 2 every `eval_every` steps, a save every `save_every` steps. `paused`: (step, its
    extra seconds, a census of that many seconds at its start)."""
    recs: list = [Start(1, START, 0.0), TorchInfo("2.13", 2, 2, {}, 100.1, 101.0),
                  LoaderBuilt({"id": 1, "site": "train.py:20", "num_workers": 0, "batch_size": 8}),
                  LoaderBuilt({"id": 2, "site": "train.py:30", "num_workers": 0, "batch_size": 8})]
    recs += [Saved(101.0 + i * 0.01, 101.0 + i * 0.01 + 0.005, "prep.py:9", "torch.save", 1 << 10, 1, None)
             for i in range(data_files)]
    t = 102.0  # start-up ends with the first batch
    if prepass:  # class weights counted through the loader: its epoch, then training's
        p = t - prepass * 0.05 - 0.001
        recs.append(IterStarted(1, p, [], 1, None, "train.py:24"))
        for _ in range(prepass):
            recs.append(Batch(1, p, p + 0.05, 0.05, 0))
            p += 0.05
        recs.append(Batch(1, p, p + 0.001, 0.0, 1))
    recs.append(IterStarted(1, t, [], 1))
    for i in range(1, steps + 1):
        recs.append(Batch(1, t, t + 0.005, 0.005, 0))
        recs.append(Backward(t + 0.008, t + 0.015))
        dur = step_s + (warm_s if i <= 3 else 0.0)
        if paused is not None and i == paused[0]:
            dur += paused[1]
            recs.append(Perturbed(t + 0.016, t + 0.016 + paused[2], "leak-census"))
        recs.append(OptimizerStep(1, t + dur, t + 0.016))
        t += dur
        if eval_every and i % eval_every == 0:
            recs.append(IterStarted(2, t, [], grad))
            for _ in range(eval_batches):
                recs.append(Batch(2, t, t + eval_batch_s - 0.002, 0.001, 0))
                t += eval_batch_s
            recs.append(Batch(2, t, t + 0.001, 0.0, 1))
            t += 0.001
        if save_every and i % save_every == 0:
            recs.append(Saved(t, t + 0.1, "train.py:50", "torch.save", 50 << 20, 1, None))
            t += 0.1
        if mode_eval_every and i % mode_eval_every == 0:  # estimate_loss(): no DataLoader
            recs.append(ModeSet(t, 0, "train.py:60", "estimate_loss", "train.py:90"))
            recs.append(ModeSet(t + 0.3, 1, "train.py:70", "estimate_loss", "train.py:90"))
            t += 0.3
    recs.append(ProbeCost(1e-6, 4 * steps, 0.002))
    recs.append(End("completed", None, t + 0.3))
    ev = ChildEvents()
    for r in recs:
        ev.add(r)
    return ev, {"started_mono": LAUNCH, "ended_mono": t + 0.8}


def _account(ev: ChildEvents, meta: dict, threads: dict | None = None) -> tuple[list[AccountEntry], list]:
    carved = carve(ev)
    steps = step_evidence(ev, carved)
    loaders, group_of = loader_infos(ev, carved.eval_batches)
    phases = eval_phases(carved, loaders, group_of, Samples(), None, 1, CoreBudget(2, 2, None), 0.1,
                         len(steps.durations_s))
    return run_account(ev, meta, steps, carved, phases, Samples(), None, threads, 1, loaders), phases


def _by(entries: list[AccountEntry]) -> dict[str, AccountEntry]:
    return {e.phase: e for e in entries}


def test_evaluation_passes_are_the_epochs_with_no_backward_under_no_grad():
    ev, _ = _run()
    passes = loader_passes(ev)
    assert [p.eval for p in passes].count(True) == 4  # loader 2, every 10 of 40 steps
    assert all(not p.eval and p.trains for p in passes if p.loader == 1)
    # Iterated with autograd on, a loader that never trains is still an evaluation...
    ev, _ = _run(grad=1)
    assert sum(p.eval for p in loader_passes(ev)) == 4


def test_eval_and_checkpoints_are_carved_out_of_the_steps_they_fall_in():
    ev, _ = _run(save_every=20)
    carved = carve(ev)
    st = step_evidence(ev, carved)
    # The steps that hold an evaluation pass (or a save) are as long as the others once carved.
    assert max(st.net_durations()[1:]) == pytest.approx(0.02, abs=1e-6)
    # (the pass and the save after the last step fall in the tear-down, not in a step)
    assert sum(st.outside_s) == pytest.approx(3 * 0.251 + 0.1, abs=1e-6)
    assert st.outliers == []  # not pauses: their time is evaluation's and the checkpoints'
    # The training's input wait is the training loader's: 5 ms a step, not the evaluation's waits.
    assert max(st.input_wait_s) == pytest.approx(0.005, abs=1e-6)


def test_saves_before_the_first_step_prepare_data_and_stay_in_start_up():
    ev, meta = _run(save_every=20, data_files=50)
    by = _by(_account(ev, meta)[0])
    assert by["checkpoint"].count == 2 and by["checkpoint"].every_steps == 20
    assert by["checkpoint"].seconds == pytest.approx(0.2, abs=1e-3)
    assert by["startup"].seconds == pytest.approx(102.005 - LAUNCH, abs=1e-3)


def test_a_pass_over_the_loader_before_training_is_start_up_named_at_its_loop():
    """Class weights counted through the training loader before the first step (its samples loaded
    an extra time): start-up, named with its batches at the line that iterated it; step 1 is the
    training's own first batch (it was the whole pass, 4 s, charged to gpubottle's probes when a
    1-ms probe fell in it)."""
    plain, _ = _account(*_run(eval_every=0))
    ev, meta = _run(eval_every=0, prepass=40)
    ev.add(Perturbed(101.0, 101.001, "model-calls"))  # a probe's millisecond inside the pass
    entries, _ = _account(ev, meta)
    by, p = _by(entries), _by(plain)
    name = "a pass over the DataLoader before training (40 batches)"
    assert by["startup"].parts[name] == pytest.approx(2.0, abs=0.01)
    assert by["startup"].part_sites[name] == "train.py:24"
    assert by["train"].count == 40 and by["train"].seconds == pytest.approx(p["train"].seconds, abs=0.01)
    assert by["gpubottle"].seconds < 0.01
    assert sum(e.seconds for e in entries) == pytest.approx(meta["ended_mono"] - LAUNCH, abs=1e-3)
    # Zipped loaders each draw a batch before the first backward: one a loader is no pass.
    zipped, zmeta = _run(eval_every=0)
    zipped.add(Batch(2, 101.90, 101.94, 0.04, 0))
    zipped.add(Batch(1, 101.94, 101.98, 0.04, 0))
    assert not any(k.startswith("a pass over") for k in _by(_account(zipped, zmeta)[0])["startup"].parts)
    e = evidence()
    e.account = entries
    (f,) = startup_findings(e)
    assert f.fixes[0].text.startswith(f"{name} (train.py:24) takes 2.0 s before the first batch, "
                                      "loading every sample it draws once more"), f.fixes[0].text


def test_a_probe_in_a_long_step_costs_the_step_at_most_its_own_span():
    """A 0.1-s census in a step that also paused 2 s (a collection, another program): gpubottle's
    line takes the census's 0.1 s, the rest stays the run's (a long gap between steps)."""
    entries, _ = _account(*_run(eval_every=0, paused=(20, 2.0, 0.1)))
    by = _by(entries)
    assert by["gpubottle"].parts["heavier probes (profiler window, sync sites, censuses)"] == \
        pytest.approx(0.1, abs=0.005)


def _waiting_on_workers(cpu_read: bool) -> tuple[ChildEvents, dict]:
    """zip_samples.py's shape: two workers each take 3 s a batch (an archive re-opened for every
    sample), so the loop draws two batches 0.3 s apart, then waits 2.7 s for the next; a warm-up
    step and the profiler window's steps (the 6th and the 9th) among the long waits. `cpu_read`:
    the waits' CPU read (the loop's thread sleeps in them), else left unread (None) as most
    fetches are."""
    recs: list = [Start(1, START, 0.0),
                  LoaderBuilt({"id": 1, "site": "zip.py:36", "num_workers": 2, "batch_size": 64})]
    t = 102.0
    recs.append(IterStarted(1, t, [], 1))
    for i in range(1, 31):
        wait = 2.7 if i % 3 == 0 else 0.01
        recs.append(Batch(1, t, t + wait, 0.0005 if cpu_read else None, 0))
        recs.append(Backward(t + wait + 0.1, t + wait + 0.2))
        if i in (6, 9):
            recs.append(Perturbed(t, t + wait + 0.3, "profiler-window"))
        recs.append(OptimizerStep(1, t + wait + 0.3, t + wait + 0.21))
        t += wait + 0.3
    recs.append(ProbeCost(1e-6, 4 * 30, 0.002))
    recs.append(End("completed", None, t + 0.3))
    ev = ChildEvents()
    for r in recs:
        ev.add(r)
    return ev, {"started_mono": LAUNCH, "ended_mono": t + 0.8}


@pytest.mark.parametrize("cpu_read", [True, False])
def test_waiting_on_workers_is_neither_the_probes_cost_nor_warm_up(cpu_read: bool):
    """A step that waited 2.7 s for its batch under the profiler window cost gpubottle nothing: the
    workers took as long either way (zip_samples.py read 2.4 s of gpubottle's, 5% of the run); nor
    is a warm-up step's long wait warm-up: it is the loader's pace, the training's input."""
    entries, _ = _account(*_waiting_on_workers(cpu_read))
    by = _by(entries)
    assert by["gpubottle"].parts.get("heavier probes (profiler window, sync sites, censuses)", 0.0) < 0.01
    assert "the first steps' warm-up" not in by["startup"].parts
    assert by["train"].parts["input"] == pytest.approx(10 * 2.7 + 19 * 0.01, rel=0.01)


def test_the_account_sums_to_the_wall_time_and_names_each_phase():
    ev, meta = _run(save_every=20)
    entries, phases = _account(ev, meta)
    wall = meta["ended_mono"] - LAUNCH
    assert sum(e.seconds for e in entries) == pytest.approx(wall, abs=1e-3)
    by = _by(entries)
    assert by["startup"].seconds == pytest.approx(102.005 - LAUNCH, abs=1e-3)  # to the first batch
    assert by["startup"].parts["import torch"] == pytest.approx(0.9)
    assert by["eval"].count == 4 and by["eval"].where == "train.py:30"
    assert by["eval"].seconds == pytest.approx(4 * 0.251, abs=1e-3)
    assert by["checkpoint"].count == 2 and by["checkpoint"].bytes == 50 << 20
    assert by["checkpoint"].every_steps == 20
    assert by["teardown"].seconds == pytest.approx(0.8, abs=1e-3)
    assert by["gpubottle"].seconds == pytest.approx(160e-6 + 0.002, abs=1e-4)  # calibrated hooks
    assert by["train"].parts["input"] == pytest.approx(39 * 0.005, abs=1e-3)
    assert phases[0].passes == 4 and len(phases[0].steps.durations_s) == 20


def test_the_first_steps_time_above_the_typical_step_is_warm_up_in_start_up():
    """Three first steps 0.3 s longer (lazy initialisation, handles, autotuning): 0.9 s moves from
    the training to start-up as its warm-up; the run still sums."""
    plain, _ = _account(*_run(eval_every=0))
    warm, _ = _account(*_run(eval_every=0, warm_s=0.3))
    p, w = _by(plain), _by(warm)
    assert "the first steps' warm-up" not in p["startup"].parts
    assert w["startup"].parts["the first steps' warm-up"] == pytest.approx(0.9, abs=0.01)
    assert w["train"].seconds == pytest.approx(p["train"].seconds, abs=0.01)
    assert sum(w["train"].parts.values()) == pytest.approx(w["train"].seconds, abs=0.01)
    assert sum(e.seconds for e in warm) == pytest.approx(sum(e.seconds for e in plain) + 0.9, abs=0.01)
    # The warm-up was in the optimizer's calls (the fixture's step() spans the step's last part):
    # it leaves the optimizer's part, not every part alike.
    for part in ("input", "backward", "optimizer"):
        assert w["train"].parts[part] == pytest.approx(p["train"].parts[part], abs=0.01), part


def test_a_warm_up_spent_compiling_is_compiling_in_start_up():
    """A compiled model's first steps compile (the backward's graph at the first backward, a
    recompile at a new shape): a cold torch.compile'd encoder read "the first steps' warm-up 20.0 s"
    beside "compiling 12.8 s", its compile fix saying 12.8 s of ~31. The stacks in those steps say
    which share of the warm-up compiled: that share is compiling's."""
    import importlib.util

    from gpubottle.analysis.stacks import Frame, ThreadSamples

    compile_fx = str(importlib.util.find_spec("torch._inductor.compile_fx").origin)
    user = Frame("<module>", "/home/u/train.py", 30)
    backward_compile = [user, Frame("Tensor.backward", "/venv/lib/python3.11/site-packages/torch/_tensor.py",
                                    600), Frame("compile_fx_inner", compile_fx, 700)]
    running = [user, Frame("Module._call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/"
                           "module.py", 1780)]
    ev, meta = _run(eval_every=0, warm_s=0.3)
    # 8 of 10 samples in the first three steps (102.0 .. 102.96) compiling; later steps none
    times = [102.05 + 0.09 * k for k in range(10)] + [103.5 + 0.01 * k for k in range(20)]
    stacks = [backward_compile] * 8 + [running] * 2 + [running] * 20
    warm, _ = _account(ev, meta, {1: ThreadSamples(1, stacks, times)})
    w = _by(warm)
    assert w["startup"].parts["compiling (torch.compile)"] == pytest.approx(0.72, abs=0.02)
    assert w["startup"].parts["the first steps' warm-up"] == pytest.approx(0.18, abs=0.02)
    assert w["startup"].seconds == pytest.approx(sum(w["startup"].parts.values()), abs=0.06)
    # (samples without their times, or too few: the warm-up stays whole)
    few, _ = _account(ev, meta, {1: ThreadSamples(1, stacks[:3] + stacks[10:], times[:3] + times[10:])})
    assert "compiling (torch.compile)" not in _by(few)["startup"].parts
    untimed, _ = _account(ev, meta, {1: ThreadSamples(1, stacks)})
    assert _by(untimed)["startup"].parts["the first steps' warm-up"] == pytest.approx(0.9, abs=0.01)


def test_a_warm_up_no_probe_timed_comes_out_of_the_untimed_code_and_the_timed_parts_keep_theirs():
    """optimizer_in_loop.py: the first step imported torch._dynamo (0.8 s) before the optimizer's
    hooks; the 128 steps' timed optimizer calls (0.061 s) read 0.01 s when every part gave up the
    warm-up in proportion."""
    from gpubottle.analysis.warmup_parts import without_warmup

    parts = {"input": 0.04, "backward": 0.04, "optimizer": 0.06, "forward and other code": 1.0}
    got = without_warmup(parts, 0.9, {})
    assert got["optimizer"] == 0.06 and got["backward"] == 0.04
    assert got["forward and other code"] == pytest.approx(0.1)
    # A timed part's own excess leaves it; the rest from the untimed code.
    got = without_warmup(parts, 0.9, {"optimizer": 0.05})
    assert got["optimizer"] == pytest.approx(0.01) and got["forward and other code"] == pytest.approx(0.15)
    # More warm-up than the untimed code holds: the rest from every part alike; the sum still holds.
    got = without_warmup({"input": 0.5, "other code": 0.2}, 0.4, {})
    assert sum(got.values()) == pytest.approx(0.3, abs=1e-3) and got["other code"] == 0.0
    # A part's excess never takes more than the part, nor all of them more than the warm-up.
    got = without_warmup({"optimizer": 0.1, "forward": 0.5}, 0.2, {"optimizer": 0.4})
    assert got == {"optimizer": 0.0, "forward": 0.4}


def test_the_step_probes_timed_calls_are_in_gpubottles_line():
    """The device clock's event records and queries and the CUDA probe's checks at each step
    boundary emit no record of their own, so the calibrated hooks never counted them (the H200's
    launch-bound loop: ~60 us a step beyond the account's line): their timed sum is added."""
    ev, meta = _run()
    ev.probe_cost = ProbeCost(1e-6, 160, 0.002, 0.05)
    entries, _ = _account(ev, meta)
    by = _by(entries)
    assert by["gpubottle"].seconds == pytest.approx(160e-6 + 0.002 + 0.05, abs=1e-4)
    assert sum(e.seconds for e in entries) == pytest.approx(meta["ended_mono"] - LAUNCH, abs=1e-3)


def test_the_hot_hooks_count_as_they_timed_themselves_the_other_records_at_their_price():
    """Each fetch, backward and optimizer step times its own hook; pricing every record as a
    fetch's probe (two /proc reads) said ~93 us a step on an H200's launch-bound loop where ~30
    were measured. Older runs (nothing timed): every record at per_call_s, as before."""
    ev, meta = _run()
    ev.probe_cost = ProbeCost(0.5e-6, 160, 0.002, 0.05, 0.0, 0.0, 0.004, 150)
    by = _by(_account(ev, meta)[0])
    assert by["gpubottle"].seconds == pytest.approx(0.004 + 10 * 0.5e-6 + 0.002 + 0.05, abs=1e-4)
    ev.probe_cost = ProbeCost(10e-6, 160, 0.002, 0.05)  # an older run's record
    assert _by(_account(ev, meta)[0])["gpubottle"].seconds == pytest.approx(160 * 10e-6 + 0.052, abs=1e-4)


def test_a_due_garbage_collection_run_at_the_first_step_is_its_own_part_of_gpubottles_line():
    """probes/gc_phase.py: a full collection gpubottle moved to the first step is its cost, said
    apart from the hooks (whose per-step time the in-place measurement is read against)."""
    ev, meta = _run()
    ev.probe_cost = ProbeCost(1e-6, 160, 0.002, 0.05, moved_gc_s=0.14)
    by = _by(_account(ev, meta)[0])
    assert by["gpubottle"].seconds == pytest.approx(160e-6 + 0.002 + 0.05 + 0.14, abs=1e-4)
    assert by["gpubottle"].parts["a due garbage collection it ran at the first step"] == 0.14
    assert by["gpubottle"].parts["hooks in the script"] == pytest.approx(0.052, abs=1e-3)


def test_a_starving_evaluation_loader_is_data_starved_with_its_own_site_and_the_run_in_view():
    ev, meta = _run(steps=60, eval_every=10, eval_batches=8, eval_batch_s=0.08)
    entries, phases = _account(ev, meta)
    e = evidence(steps=60, step_s=0.02, wait_s=0.005, cores=8, tree=0.3, main=0.3)
    e.account, e.phases = entries, phases
    ph = phases[0]
    ph.cpu = e.cpu  # the loader mostly blocked: waiting on storage
    ph.steps.input_wait_cpu_s = [0.001] * len(ph.steps.durations_s)
    report = diagnose(e)
    f = report.findings[0]
    assert (report.primary, f.category, f.phase) == (v.DATA_STARVED, v.DATA_STARVED, "eval")
    assert f.run_share is not None and f.run_share > 0.4 and f.severity == "critical"
    fix = f.fixes[0]
    assert fix.where == "train.py:30" and fix.change["num_workers"][0] == 0
    assert fix.change["persistent_workers"] == [False, True]  # started once, not every pass
    total = sum(a.seconds for a in entries)
    assert fix.expected_run_s is not None and fix.expected_run_s < total
    assert "evaluation" in (fix.expected or "") and "run " in (fix.expected or "")


def test_checkpoints_lead_when_they_cost_the_run_more_than_the_steps_verdict():
    ev, meta = _run(steps=40, eval_every=0, save_every=2, step_s=0.02)
    entries, _ = _account(ev, meta)
    e = evidence(steps=40, step_s=0.02, cores=2, tree=1.0, main=1.0)
    e.account = entries
    (f,) = checkpoint_findings(e)
    d = decide_checkpoints(e)
    assert d is not None and d.count == 20 and d.every == 2 and d.where == "train.py:50"
    assert d.save_less is not None and d.save_less.new_every == 100
    assert f.category == v.CHECKPOINT_BOUND and f.phase == "checkpoint"
    assert f.fixes[0].where == "train.py:50"
    assert f.fixes[0].change == {"save every (steps)": [2, 100]}
    saves = _by(entries)["checkpoint"].seconds
    total = sum(a.seconds for a in entries)
    assert f.fixes[0].expected_run_s == pytest.approx(total - saves + saves * 2 / 100, abs=1e-3)
    report = diagnose(e)
    assert report.primary == v.COMPUTE_BOUND and report.findings[0].category == v.CHECKPOINT_BOUND
    assert report.to_contract()["lead"] == v.CHECKPOINT_BOUND


def test_a_large_save_of_what_resuming_needs_is_not_told_to_save_less():
    """10 saves of 217 MiB (a model and Adam's state, nothing else: the probes counted all of it
    as the training's state) were told "save only what resuming needs"; a save that holds 150 MiB
    beyond them still is, with its numbers."""
    e = evidence(steps=40, step_s=0.02, cores=2, tree=1.0, main=1.0)
    e.account = [AccountEntry("train", 8.0, 0.8),
                 AccountEntry("checkpoint", 2.0, 0.2, where="train.py:50", what="torch.save", count=10,
                              every_steps=4, bytes=217 << 20, state_bytes=217 << 20)]
    d = decide_checkpoints(e)
    assert d is not None and not d.big_state
    assert not any("resuming needs" in x.text for x in checkpoint_findings(e)[0].fixes)
    e.account[1].state_bytes = 67 << 20
    (f,) = checkpoint_findings(e)
    assert f.fixes[-1].text.startswith("each save holds 150 MiB beyond the model's weights and the "
                                       "optimizer's state (67 MiB): save only what resuming needs")
    e.account[1].state_bytes = None  # older runs, or no optimizer the probes saw: as before
    assert "save only what resuming needs" in checkpoint_findings(e)[0].fixes[-1].text


def test_start_up_names_only_what_the_script_can_change():
    e = evidence()
    e.account = [AccountEntry("startup", 6.0, 0.6, parts={"import torch": 1.5, "Python and gpubottle "
                                                        "starting": 0.1, "other": 2.0,
                                                        "Records.__init__": 2.4},
                              part_sites={"Records.__init__": "data.py:12"}),
                 AccountEntry("train", 4.0, 0.4)]
    (f,) = startup_findings(e)
    d = decide_startup(e)
    assert d is not None and (d.top, d.top_s, d.site, d.own_s) == ("Records.__init__", 2.4, "data.py:12", 2.4)
    assert f.category == v.STARTUP_BOUND and f.fixes[0].where == "data.py:12"
    e.account[0].parts.pop("Records.__init__")  # unnamed (no stacks) or torch's own: nothing to say
    e.account[0].parts["import torch._dynamo"] = 2.4
    assert startup_findings(e) == []


def test_the_account_fits_80_columns():
    ev, meta = _run(save_every=20)
    entries, _ = _account(ev, meta)
    buf = io.StringIO()
    from rich.console import Console

    render_account(Console(file=buf, width=80), entries)
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("Where the run's") and all(len(x) <= 80 for x in lines)
    assert any(x.lstrip().startswith("evaluation") for x in lines)


def test_one_long_gap_is_said_as_one():
    from rich.console import Console

    for count, said in ((1, "1 long gap in the loop: loss.backward()"), (3, "3 long gaps in the loop")):
        buf = io.StringIO()
        render_account(Console(file=buf, width=120), [AccountEntry(
            phase="between-steps", seconds=0.11, share=0.01, count=count, what="loss.backward()",
            where="train.py:15")])
        assert said in buf.getvalue(), buf.getvalue()


def test_a_change_predicted_to_gain_under_5_percent_is_no_fix():
    """8 workers on 2 cores, mostly blocked, the cores full: more workers would gain nothing
    (measured: 8, 10 and 16 take the same time). Not data-starved, and no num_workers fix."""
    e = evidence(steps=60, step_s=0.0045, wait_s=0.003, num_workers=8, per_worker=0.2, cores=2,
                 tree=1.95, main=0.4, run_queue=0.05)
    report = diagnose(e)
    assert report.primary == v.PREPROCESSING_BOUND
    assert not any("num_workers" in fix.change and fix.change["num_workers"][1] > 8
                   for f in report.findings for fix in f.fixes)


def test_an_evaluation_without_a_loader_is_the_span_from_eval_to_train():
    """model.eval() ... model.train() between steps, no backward inside: evaluation, carved out of
    the step it falls in; a span with a backward inside (a train() the loop calls every step) is
    not; nor is one before the first step."""
    ev, meta = _run(eval_every=0, mode_eval_every=10)
    ev.add(ModeSet(101.5, 0, "train.py:60", "estimate_loss", "train.py:90"))  # before the loop
    ev.add(ModeSet(101.6, 1, "train.py:70", "estimate_loss", "train.py:90"))
    ev.add(ModeSet(102.001, 0, "train.py:80", "train", None))  # around the first step's backward
    ev.add(ModeSet(102.019, 1, "train.py:81", "train", None))
    carved = carve(ev)
    # After steps 10, 20, 30 and 40 (the last one falls in the tear-down, carved all the same).
    assert [round(m.t1 - m.t0, 3) for m in carved.mode_evals] == [0.3] * 4
    st = step_evidence(ev, carved)
    assert max(st.net_durations()[1:]) == pytest.approx(0.02, abs=1e-6)
    entries = _account(ev, meta)[0]
    assert sum(e.seconds for e in entries) == pytest.approx(meta["ended_mono"] - LAUNCH, abs=1e-3)
    by = _by(entries)
    assert by["eval"].function == "estimate_loss" and by["eval"].where == "train.py:90"
    assert by["eval"].count == 4 and by["eval"].seconds == pytest.approx(1.2, abs=1e-3)
    assert by["eval"].every_steps == 10


def test_a_new_iterator_for_every_batch_is_training_with_its_site_and_build_time():
    """`x, y = next(iter(loader))` each step: every pass holds one batch and never ends, and its
    batch is used by the backward that follows. Those passes were taken for 150 evaluation passes
    "every 1 steps" and the loop's wait for them left out of the training."""
    recs: list = [Start(1, START, 0.0), TorchInfo("2.13", 2, 2, {}, 100.1, 101.0),
                  LoaderBuilt({"id": 1, "site": "train.py:6", "num_workers": 2, "batch_size": 64})]
    t = 102.0
    for _ in range(30):
        recs.append(IterStarted(1, t + 0.03, [7, 8], 1, t, "train.py:10"))  # iter(): 30 ms
        recs.append(Batch(1, t + 0.03, t + 0.04, 0.001, 0))
        recs.append(Backward(t + 0.045, t + 0.05))
        recs.append(OptimizerStep(1, t + 0.055, t + 0.051))
        t += 0.06
    recs.append(End("completed", None, t + 0.1))
    ev = ChildEvents()
    for r in recs:
        ev.add(r)
    passes = loader_passes(ev)
    assert len(passes) == 30 and all(p.trains and not p.eval for p in passes)
    carved = carve(ev)
    loaders, _ = loader_infos(ev, carved.eval_batches)
    [lo] = loaders
    assert (lo.iterators, lo.batches, lo.eval_batches) == (30, 30, 0)
    assert lo.iter_site == "train.py:10" and lo.iter_build_s == pytest.approx(0.9)


def _host_ahead_run(census_idle_s: float) -> tuple[ChildEvents, dict]:
    """40 steps that queue 10 ms of GPU work each in 2 ms of host time; the hooks cost 80 ms of host
    time in all and a census at step 20's boundary takes the host 60 ms, in which the GPU, still
    running the backlog, idles `census_idle_s`."""
    recs: list = [Start(1, START, 0.0), TorchInfo("2.13", 2, 2, {}, 100.1, 101.0)]
    marks: list[list[object]] = []
    t, dev = 102.0, 0.0
    for k in range(1, 41):
        if k == 21:  # the census ran at the boundary of step 20, inside step 21 on the host's clock
            recs.append(Perturbed(t, t + 0.06, "leak-census"))
            t += 0.06
            dev += census_idle_s
        t += 0.002
        dev += 0.010
        recs.append(Backward(t - 0.001, t - 0.0005))
        recs.append(OptimizerStep(1, t, t - 0.0004))
        marks.append(["s", k, dev, t])
    marks.append(["z", 40, dev, 102.0 + dev])
    recs.append(ProbeCost(0.0005, 160, 0.0))
    recs.append(End("completed", None, t + 0.02))
    ev = ChildEvents()
    for r in recs:
        ev.add(r)
    ev.device_marks = marks
    return ev, {"started_mono": LAUNCH, "ended_mono": 102.0 + dev + 0.05}


def test_where_the_gpu_sets_the_pace_gpubottle_costs_only_the_steps_it_left_the_gpu_idle():
    """A host running ahead of the GPU waits for it anyway: the hooks' 80 ms and the census's 60 ms
    of host time cost the training nothing while the backlog ran on. Deducted from the training
    they made its account short of the device's own time (tests/e2e/test_device_clock.py under a
    loaded CI machine: 1.26 s for 1.40 s of GPU work). A census the GPU idled through is
    gpubottle's, and only that idle."""
    entries, _ = _account(*_host_ahead_run(0.0))
    by = _by(entries)
    assert by["gpubottle"].seconds == 0.0, entries
    assert by["train"].seconds == pytest.approx(0.40, abs=0.011), entries
    entries, _ = _account(*_host_ahead_run(0.05))
    by = _by(entries)
    assert by["gpubottle"].seconds == pytest.approx(0.05, abs=1e-3), entries
    assert by["train"].seconds == pytest.approx(0.40, abs=0.011), entries


def test_an_evaluation_pass_begins_when_its_iter_is_called():
    """Its iter() forks its workers: that is the evaluation's time, not the training's before it."""
    ev, _ = _run(eval_every=0, steps=10)
    t = 103.0
    ev.add(IterStarted(2, t + 0.03, [7, 8], 0, t, "train.py:23"))
    ev.add(Batch(2, t + 0.03, t + 0.05, 0.001, 0))
    ev.add(Batch(2, t + 0.05, t + 0.06, 0.0, 1))
    [p] = [p for p in loader_passes(ev) if p.loader == 2]
    assert p.eval and p.t0 == pytest.approx(t) and p.site == "train.py:23"
    assert carve(ev).loop_sites()[0] == {"train.py:23"}


def test_gpubottles_own_start_is_its_line_and_the_run_grows_by_what_came_before_the_launch():
    """`gpubottle run` started 0.4 s before it launched the script; in the script's process its
    imports and probes took 0.1 s before the script's first line. Both are gpubottle's line; the
    0.1 s leaves start-up ("Python starting" stays), and the run's wall time grows by the 0.4 s."""
    ev, meta = _run()
    plain = _by(_account(ev, meta)[0])
    ev.probe_cost = ProbeCost(1e-6, 160, 0.002, 0.0, LAUNCH + 0.02, LAUNCH + 0.12)
    meta = {**meta, "process_start_mono": LAUNCH - 0.4}
    entries, _ = _account(ev, meta)
    by = _by(entries)
    own = by["gpubottle"]
    assert own.parts["its start (before the script's first line)"] == pytest.approx(0.5, abs=1e-4)
    assert own.seconds == pytest.approx(plain["gpubottle"].seconds + 0.5, abs=1e-4)
    assert by["startup"].seconds == pytest.approx(plain["startup"].seconds - 0.1, abs=1e-4)
    assert "Python starting" in by["startup"].parts
    assert "Python and gpubottle starting" not in by["startup"].parts
    wall = meta["ended_mono"] - LAUNCH + 0.4
    assert sum(e.seconds for e in entries) == pytest.approx(wall, abs=1e-3)
    assert own.share == pytest.approx(own.seconds / wall, abs=1e-4)
    # gpubottle.profile() runs in the user's process: its start is the user's, never counted.
    inside = _by(_account(ev, {**meta, "in_process": True})[0])["gpubottle"]
    assert inside.seconds == pytest.approx(plain["gpubottle"].seconds + 0.1, abs=1e-4)
    # A span that is not inside the run (a clock read wrong) is left out, as an older run's.
    ev.probe_cost = ProbeCost(1e-6, 160, 0.002, 0.0, LAUNCH - 5.0, LAUNCH + 0.12)
    old = _by(_account(ev, {**meta, "process_start_mono": LAUNCH - 400.0})[0])
    assert old["gpubottle"].seconds == pytest.approx(plain["gpubottle"].seconds, abs=1e-4)
    assert "Python and gpubottle starting" in old["startup"].parts


INSTALL = "its probes' install (at `import torch`) and import watcher"


def test_the_probes_install_at_import_torch_is_gpubottles_line_not_start_up():
    """The torch probes install as the script imports torch (after its first line): timed there
    (~1 ms measured), moved from start-up to gpubottle's line; an install before the script's
    first line is already in its start's span and is not counted twice."""
    ev, meta = _run()
    plain = _by(_account(ev, meta)[0])
    ev.probe_cost = ProbeCost(1e-6, 160, 0.002, 0.0, LAUNCH + 0.02, LAUNCH + 0.12, 0.0, 0,
                              LAUNCH + 1.0, LAUNCH + 1.3)
    entries, _ = _account(ev, meta)
    by = _by(entries)
    assert by["gpubottle"].parts[INSTALL] == pytest.approx(0.3, abs=1e-4)
    assert by["startup"].seconds == pytest.approx(plain["startup"].seconds - 0.1 - 0.3, abs=1e-4)
    assert sum(e.seconds for e in entries) == pytest.approx(meta["ended_mono"] - LAUNCH, abs=1e-3)
    ev.probe_cost = ProbeCost(1e-6, 160, 0.002, 0.0, LAUNCH + 0.02, LAUNCH + 0.12, 0.0, 0,
                              LAUNCH + 0.05, LAUNCH + 0.06)  # inside gpubottle's start
    assert INSTALL not in _by(_account(ev, meta)[0])["gpubottle"].parts
    # What the stacks saw of gpubottle's own work in start-up (its import watcher) moves too
    import os

    from gpubottle.analysis.stacks import Frame, ThreadSamples
    from gpubottle.probes.sites import OWN_DIR

    watcher = [Frame("<module>", "/w/train.py", 1),
               Frame("_find_spec", "<frozen importlib._bootstrap>", 1078),
               Frame("_ModuleWatcher.find_spec", os.path.join(OWN_DIR, "probes", "install.py"), 34)]
    main = ThreadSamples(1, [watcher] * 5, [101.2 + 0.1 * i for i in range(5)])  # after `import torch`
    entries, _ = _account(ev, meta, {1: main})
    own, start = _by(entries)["gpubottle"], _by(entries)["startup"]
    assert "gpubottle installing its probes" not in start.parts and own.parts[INSTALL] > 0.1
    assert sum(e.seconds for e in entries) == pytest.approx(meta["ended_mono"] - LAUNCH, abs=1e-3)


def _cpu(logical: int, available: float, tree: float, system: float) -> CpuEvidence:
    return CpuEvidence(samples=10, interval_s=0.2, cores_logical=logical, cores_affinity=int(available),
                       cores_available=available, tree_cores=tree, system_cores=system)


def test_the_samplers_take_from_a_run_whose_own_cores_are_busy_however_idle_the_machine():
    """A job given 1 core of 2 (an affinity mask, a cgroup cpuset: the samplers, its children,
    inherit it): they take their CPU from the run though the other core idles. On the whole
    machine, only where it has no core to spare."""
    s = Samples(own=[OwnSample(float(t), 0.004) for t in range(10)],
                outside=[OutsideSample(float(t), 0.0, [], 0.004) for t in range(10)])
    pinned = _cpu(2, 1.0, 0.992, 1.0)  # the machine half idle, the run's core full
    assert collectors_s(s, pinned, 100.0) == pytest.approx(100.0 * 0.008 / 1.0)
    idle_job = _cpu(2, 1.0, 0.3, 0.3)  # the job's core has room: they took nothing
    assert collectors_s(s, idle_job, 100.0) == 0.0
    whole = _cpu(2, 2.0, 1.99, 2.0)  # the machine's cores, all busy
    assert collectors_s(s, whole, 100.0) == pytest.approx(100.0 * 0.008 / 2.0)
    assert collectors_s(s, _cpu(2, 2.0, 1.0, 1.0), 100.0) == 0.0


def test_the_time_memory_reads_held_the_script_is_gpubottle_s_own():
    """The sampler's smaps_rollup reads hold the script's allocations (its running total in
    OwnSample.stalled_s): that time moves from the training to gpubottle's line, said as its own
    part, whether or not a core was spare (the samplers' CPU here cost nothing: no CPU evidence)."""
    ev, meta = _run()
    carved = carve(ev)
    steps = step_evidence(ev, carved)
    loaders, group_of = loader_infos(ev, carved.eval_batches)
    phases = eval_phases(carved, loaders, group_of, Samples(), None, 1, CoreBudget(2, 2, None), 0.1,
                         len(steps.durations_s))
    plain = _by(run_account(ev, meta, steps, carved, phases, Samples(), None, None, 1, loaders))
    held = Samples(own=[OwnSample(101.0, 0.01, 0.0), OwnSample(102.0, 0.01, 0.004),
                        OwnSample(103.0, 0.01, 0.012), OwnSample(104.0, 0.01)])  # an older record: None
    by = _by(run_account(ev, meta, steps, carved, phases, held, None, None, 1, loaders))
    part = "memory reads (the script held meanwhile)"
    assert by["gpubottle"].parts[part] == pytest.approx(0.012)
    assert part not in plain["gpubottle"].parts
    assert by["gpubottle"].seconds - plain["gpubottle"].seconds == pytest.approx(0.012, abs=1e-4)
    assert plain["train"].seconds - by["train"].seconds == pytest.approx(0.012, abs=1e-4)
