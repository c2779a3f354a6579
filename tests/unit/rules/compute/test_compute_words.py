"""The compute rules' words: each sentence form once, from decisions built by hand (the rule tests
in test_rules.py assert the decisions)."""

from __future__ import annotations

from gpubottle.evidence import StackFrameShare
from gpubottle.rules.compute import decide as cd
from gpubottle.rules.compute import words
from gpubottle.rules.compute.decide import Compute, LoopOverhead


def _compute(**kw) -> Compute:
    base = dict(share=0.98, step_s=0.1, n=40, compute_cpu=3.6, cores_available=4.0, told=True,
                model_share=0.7, samples_main=200, overhead=None)
    base.update(kw)
    return Compute(**base)  # type: ignore[arg-type]


def test_compute_bound_summary_and_facts() -> None:
    d = _compute()
    assert words.compute_summary(d) == ("the model's own computation takes 98% of step time: the loop "
                                        "is compute-bound")
    d.told = False
    assert words.compute_summary(d) == "the main process computes 98% of step time: the loop is compute-bound"
    d.overhead = StackFrameShare("log_metrics", "train.py:30", 0.5)
    assert words.compute_summary(d) == ("the main process computes 98% of step time, 50% of it in "
                                        "log_metrics, outside the model (loop-overhead)")
    facts = words.compute_facts(d)
    assert [(f.name, f.value) for f in facts] == [("compute_share", 0.98), ("compute_cores", 3.6)]
    assert facts[0].text == "the main process computes 98% of each 100.0 ms step (40 steps measured)"
    assert facts[1].text == "it keeps 3.6 cores busy while computing, of 4 available"
    d.compute_cpu = 1.0  # one core, not "1 cores" (a script that set torch.set_num_threads(1))
    assert words.compute_facts(d)[1].text == "it keeps 1 core busy while computing, of 4 available"
    d.compute_cpu = 0.996
    assert words.compute_facts(d)[1].text.startswith("it keeps 1 core busy")
    d.compute_cpu = 4.3  # a reading over the cores available (the CPU and the wait sampled apart)
    facts = words.compute_facts(d)
    assert facts[1].text == "it keeps all 4 cores available busy while computing" and facts[1].value == 4.3


def test_compute_bound_fixes() -> None:
    d = _compute(threads_to_cores=(64, 4), threads_site="train.py:5")
    got = words.compute_fixes(d)
    assert got[0].text == ("torch computes with 64 threads on 4 cores: use as many threads as cores, "
                           "torch.set_num_threads(4)")
    assert got[0].where == "train.py:5" and got[0].change == {"torch.set_num_threads": [64, 4]}
    assert got[-1].text.startswith("run the math faster: torch.compile(model)")
    # The script's own names for its modules, where the counted step saw them called
    assert words.compute_fixes(_compute(model_names=["net"]))[-1].text.startswith(
        "run the math faster: net = torch.compile(net) (compiling adds 15-20 s")
    assert words.compute_fixes(_compute(model_names=["emb", "lstm", "head"]))[-1].text.startswith(
        "run the math faster: torch.compile on each module the step calls (emb = "
        "torch.compile(emb), and the same for lstm, head) (compiling")
    d = _compute(threads_up=(2, 4))
    got = words.compute_fixes(d)
    assert got[0].text.startswith("torch computes on 2 thread(s) with 4 cores available: "
                                  "torch.set_num_threads(4); large matrix ops gain most")
    assert got[0].change == {"torch.set_num_threads": [2, 4]} and "try it and time it" in got[0].text
    got = words.compute_fixes(_compute(threads_up=(1, 2), threads_site="train.py:5"))
    assert got[0].where == "train.py:5"
    assert "(set at train.py:5): torch.set_num_threads(2) there" in got[0].text
    got = words.compute_fixes(_compute(threads_up=(1, 2), threads_env="OMP_NUM_THREADS=1"))
    assert got[0].where is None
    assert "(OMP_NUM_THREADS=1 in the environment): unset OMP_NUM_THREADS" in got[0].text
    d.overhead = StackFrameShare("log_metrics", "train.py:30", 0.5)
    assert words.compute_fixes(d) == []  # faster math would not make this loop faster


def test_compute_bound_open_questions() -> None:
    assert words.compute_question(_compute()) is None
    assert words.compute_question(_compute(question=cd.NO_LOADER, samples_main=None)) == (
        "no DataLoader: time the script spends making batches itself is counted as compute here; "
        "stack samples (py-spy) tell them apart")
    assert words.compute_question(_compute(question=cd.NO_LOADER, samples_main=11)).endswith(
        "; the main thread's 11 stack samples are too few to tell them apart (a longer run would)")
    assert words.compute_question(_compute(question=cd.UNPINNED, model_share=0.3)) == (
        "30% of the main thread's 200 stack samples are in the model's forward, backward and "
        "optimizer step; the rest is the loop's own code, which the samples did not pin to one function")
    assert words.compute_question(_compute(question=cd.FEW_SAMPLES, samples_main=9)).startswith(
        "9 of the main thread's stack samples: too few to tell")
    assert words.compute_question(_compute(question=cd.FEW_SAMPLES, samples_main=None)).startswith(
        "no stack samples: too few")


def test_loop_overhead_words() -> None:
    d = LoopOverhead(StackFrameShare("log_metrics", "train.py:30", 0.5),
                     [StackFrameShare("to_list", "train.py:44", 0.06)], 0.3, 200, 10, 0.1, 0.055)
    assert words.overhead_summary(d) == ("log_metrics, the loop's own code outside the model, takes 50% "
                                         "of each step")
    facts = words.overhead_facts(d)
    assert facts[0].text == ("of the main thread's 200 stack samples in the measured steps, 30% are in "
                             "the model's forward, backward and optimizer step; 50% in log_metrics "
                             "(train.py:30), which the loop calls outside them")
    assert facts[1].text == "also outside the model: to_list (train.py:44) 6%"
    fixes = words.overhead_fixes(d)
    assert fixes[0].expected == "step 100.0 ms -> about 55.0 ms (1.8x)" and fixes[0].expected_step_s == 0.055
    assert fixes[1].where == "train.py:30" and fixes[1].text.startswith("make log_metrics cheaper")


def test_a_sleep_in_the_loop_is_offered_its_removal_alone() -> None:
    """`time.sleep(0.004)` after each step (69% of a 5.1-ms step) read "remove the sleep", then
    "wrap it in `if step % 10 == 0:`" with 2.6x: the same change in other words."""
    d = LoopOverhead(StackFrameShare("time.sleep(0.004)", "sleep_loop.py:17", 0.69,
                                     called_at="sleep_loop.py:17", kind="sleeping (time.sleep)"),
                     [], 0.06, 16, 10, 0.0051, 0.002)
    [fix] = words.overhead_fixes(d)
    assert "remove the sleep from the loop" in fix.text and fix.where == "sleep_loop.py:17"


def test_a_helper_that_feeds_the_model_is_never_offered_to_run_less_often() -> None:
    """`x, y = mix_rows(x, y)` before `model(x)`: every 10 steps would train on batches it never
    touched; the fix makes it cheaper or moves it into the workers, and promises no number."""
    d = LoopOverhead(StackFrameShare("mix_rows", "train.py:12", 0.7, called_at="train.py:35",
                                     feeds_model=True), [], 0.2, 120, 10, 0.02, 0.0074)
    [fix] = words.overhead_fixes(d)
    assert fix.change == {} and fix.expected_step_s is None and fix.where == "train.py:12"
    assert fix.text.startswith("mix_rows takes 70% of each 20.0 ms step, and what it returns feeds "
                               "the model (its call at train.py:35), so it must run every step")
    assert "DataLoader's workers" in fix.text and "try it and time it" in fix.text


def test_what_reads_the_models_output_to_feed_its_next_call_is_never_sent_to_the_workers() -> None:
    """An agent's `a = dist.sample()` from its policy's logits, fed back through the environment:
    it needs this step's output, so no DataLoader worker can make it ahead (reinforce.py, 2026-12-
    02: "or do its work per sample in the DataLoader's workers" was said of it, in a loop with no
    DataLoader). Its kind's remedy stays (validate_args off: 270 -> 209 us an environment step)."""
    from gpubottle.analysis.work_kinds import DISTRIBUTION_CHECKS

    d = LoopOverhead(StackFrameShare("a = dist.sample()", "rl.py:29", 0.2, called_at="rl.py:29",
                                     kind=DISTRIBUTION_CHECKS, feeds_model=True, after_model=True),
                     [], 0.6, 150, 10, 0.0368, 0.03)
    [fix] = words.overhead_fixes(d)
    assert "set_default_validate_args(False)" in fix.text and "workers" not in fix.text, fix.text
    ahead = LoopOverhead(StackFrameShare("a = dist.sample()", "rl.py:29", 0.2, called_at="rl.py:29",
                                         kind=DISTRIBUTION_CHECKS, feeds_model=True), [], 0.6, 150, 10,
                         0.0368, 0.03)
    assert "DataLoader's workers" in words.overhead_fixes(ahead)[0].text


def test_an_inference_loops_own_work_on_each_batch_is_never_offered_less_often() -> None:
    """Batch inference writing each batch's predictions to a CSV (`w.writerow([f"{p:.4f}" for p in
    row])`, 17% of each batch; infer.py, 2026-12-02) was told to wrap it in `if step % 10 == 0:`,
    which would drop nine batches' results, with a number promised. A loop that trains nothing gets
    the cheaper fix alone; its log records may still be fewer."""
    from gpubottle.analysis.work_kinds import LOG_RECORDS

    top = StackFrameShare('w.writerow([f"{p:.4f}" for p in row])', "infer.py:14", 0.17,
                          called_at="infer.py:14")
    d = LoopOverhead(top, [], 0.6, 120, 10, 0.005, 0.0043, inference=True)
    [fix] = words.overhead_fixes(d)
    assert "the loop trains nothing" in fix.text and "not run less often" in fix.text, fix.text
    assert not fix.change and fix.expected_step_s is None and "step % 10" not in fix.text
    logs = LoopOverhead(StackFrameShare("log_batch", "infer.py:20", 0.2, called_at="infer.py:14",
                                        kind=LOG_RECORDS), [], 0.6, 120, 10,
                        0.005, 0.0043, inference=True)
    assert any(x.change for x in words.overhead_fixes(logs))
    training = LoopOverhead(top, [], 0.6, 120, 10, 0.005, 0.0043)
    assert any("step % 10 == 0" in x.text for x in words.overhead_fixes(training))


def test_a_statement_of_the_loop_that_feeds_the_model_is_told_its_time_is_its_ops() -> None:
    """`x = torch.randn(512, 1024)` named by its own line (no known kind): its time is in the C
    ops it calls; "tensor ops instead of Python loops" does not reach it."""
    d = LoopOverhead(StackFrameShare("x = torch.randn(512, 1024)", "bench.py:7", 0.29,
                                     called_at="bench.py:7", feeds_model=True), [], 0.6, 150, 10,
                     0.006, 0.0045)
    [fix] = words.overhead_fixes(d)
    assert "make the ops on that line cheaper" in fix.text and "Python loops" not in fix.text, fix.text


def test_a_loss_written_by_hand_must_get_cheaper_and_never_moves_into_the_workers() -> None:
    """`loss = weighted_loss(model(x), y)` then backward(): a Python loop over the batch's rows in
    the loss. It needs the model's output, so the workers cannot take it: batched tensor ops."""
    d = LoopOverhead(StackFrameShare("weighted_loss", "train.py:14", 0.59, called_at="train.py:25",
                                     feeds_model=True, loss=True), [], 0.3, 17, 10, 0.007, 0.0033)
    [fix] = words.overhead_fixes(d)
    assert fix.change == {} and fix.expected_step_s is None and fix.where == "train.py:14"
    assert "is the loss backward() trains on (its call at train.py:25)" in fix.text
    assert "(w[labels] * F.cross_entropy(logits, labels, reduction='none')).mean()" in fix.text
    # (a focal loss looping over its classes: the rows' remedies do not reach it)
    assert "a term per class is one op over the class dimension" in fix.text
    assert "try it and time it" in fix.text
    assert "workers" not in fix.text and "every 10 steps" not in fix.text


def test_a_metric_added_up_every_step_is_made_cheaper_first() -> None:
    """`correct += sum(1 for p, t in zip(pred, y) if p == t)`: a comparison element by element, 25%
    of a 2.4-ms step. Every 10 steps would count one batch in 10: whole-batch ops lead, and less
    often stays second, said with what it costs."""
    top = StackFrameShare("<genexpr>", "acc.py:18", 0.25, called_at="acc.py:18", accumulates=True)
    cheaper, less = words.overhead_fixes(LoopOverhead(top, [], 0.6, 900, 10, 0.0024, 0.0018))
    assert cheaper.text.startswith("<genexpr> takes 25% of each 2.4 ms step and the loop adds its "
                                   "result up at every step (acc.py:18): make it cheaper"), cheaper.text
    assert "(pred == y).sum().item()" in cheaper.text and cheaper.expected_step_s is None
    assert less.text.endswith("its total would then count one batch in 10"), less.text
    assert less.change == {"call every (steps)": [1, 10]}


def test_bfloat16_is_advised_only_where_the_cpu_computes_it() -> None:
    """CPU autocast to bf16 ran 3.6x faster on this VM's AMX; on a CPU without bf16 instructions it
    is emulated and slower: never advised there, and said with its condition where unknown."""
    native, emulated, unknown = (words.compute_fixes(_compute(bf16=b))[-1].text for b in (True, False, None))
    assert "this CPU computes bf16 natively" in native
    assert "not bfloat16 autocast" in emulated and "torch.autocast" not in emulated
    assert "without bf16 instructions it is slower: time it" in unknown
    # An inference loop has no loss to converge: its outputs are what to check.
    assert "check the loss still converges" in native
    inferring = words.compute_fixes(_compute(bf16=True, inference=True))[-1].text
    assert "check its outputs stay close enough to float32's" in inferring and "loss" not in inferring


def test_the_cpu_says_whether_it_computes_bf16(tmp_path) -> None:
    from gpubottle.collect.system import cpu_bf16

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile\n")
    assert cpu_bf16(str(info)) is True
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2\n")
    assert cpu_bf16(str(info)) is False
    info.write_text("processor\t: 0\nFeatures\t: fp asimd bf16 i8mm\n")  # Arm
    assert cpu_bf16(str(info)) is True
    assert cpu_bf16(str(tmp_path / "missing")) is None


def test_the_cpu_says_whether_it_computes_fp16(tmp_path) -> None:
    from gpubottle.collect.system import cpu_fp16

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 avx512_fp16 amx_tile\n")
    assert cpu_fp16(str(info)) is True
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n")  # an AMD EPYC's
    assert cpu_fp16(str(info)) is False
    info.write_text("processor\t: 0\nFeatures\t: fp asimd fphp asimdhp bf16\n")  # Arm: not said
    assert cpu_fp16(str(info)) is None
    assert cpu_fp16(str(tmp_path / "missing")) is None


def test_float16_math_on_a_cpu_without_its_instructions_is_said_first_with_bfloat16_or_float32() -> None:
    """A GPU script's autocast to float16, run on a CPU: torch's fallback made a width-512 MLP's
    step 10x slower than float32 here (tests/check_fixes times the applied fix)."""
    from gpubottle.rules.compute.emulated import PARAMS_FP16, fp16_fix

    d = _compute(fp16_emulated="train.py:18", bf16=True, autocast="autocast to float16 at train.py:18")
    assert "in float16, which this CPU has no instructions for" in words.compute_summary(d)
    fixes = words.compute_fixes(d)
    assert fixes[0].where == "train.py:18"
    assert fixes[0].text == ("first run the math in bfloat16 or float32: this CPU has no float16 "
                             "instructions and emulates it (emulated-math, below)")
    assert not any("already in use: autocast to float16" in f.text for f in fixes)
    # emulated-math's own fix (tests/unit/probes/test_math_modes.py: said from the setting alone)
    fix = fp16_fix("train.py:18", True)
    assert fix.where == "train.py:18" and fix.text.startswith(
        "autocast runs the math in float16 (at train.py:18), and this CPU has no float16 instructions")
    assert "Use torch.autocast('cpu', dtype=torch.bfloat16) there" in fix.text
    no_bf16 = fp16_fix("train.py:18", False).text
    assert "Use float32: leave autocast out" in no_bf16 and "bfloat16" not in no_bf16
    half = fp16_fix(PARAMS_FP16, True)
    assert half.text.startswith("the model's parameters are float16 (model.half())") and half.where is None
    assert "model.float() with float32 inputs, and for faster math bfloat16 autocast" in half.text


def test_work_needed_every_step_is_made_cheaper_never_run_less_often() -> None:
    top = StackFrameShare("torch.nn.utils.clip_grad_norm_(p, 1.0)", "train.py:30", 0.6,
                          kind="clipping gradients (torch.nn.utils.clip_grad_*)")
    d = LoopOverhead(top, [], 0.3, 80, 10, 0.025, 0.012)
    [fix] = words.overhead_fixes(d)
    assert fix.text.startswith("torch.nn.utils.clip_grad_norm_(p, 1.0) takes 60% of each 25.0 ms step, "
                               "and the training needs it at every step: its time is clipping gradients")
    assert "clip_grad_norm_(model.parameters(), max_norm)" in fix.text and fix.text.endswith("time it")
    assert fix.where == "train.py:30" and not fix.change and fix.expected_step_s is None


def test_a_walk_over_the_models_tensors_is_first_offered_in_one_call_then_less_often() -> None:
    from gpubottle.analysis.tensor_loops import TENSOR_LOOP

    top = StackFrameShare("ModelEma.update", "train.py:17", 0.4, called_at="train.py:37", kind=TENSOR_LOOP)
    cheaper, less = words.overhead_fixes(LoopOverhead(top, [], 0.6, 200, 10, 0.0127, 0.0083))
    assert cheaper.text.startswith(f"its time is {TENSOR_LOOP}: torch._foreach_* functions")
    assert cheaper.text.endswith("try it and time it") and not cheaper.change
    assert less.change == {"call every (steps)": [1, 10]} and "decay ** 10" in less.text


def test_a_loop_over_the_gradients_is_made_one_call_never_run_less_often() -> None:
    """A clip by hand, per tensor (tests/scripts/real_code/clip_by_hand.py): it was offered
    "wrap the call in `if step % 10 == 0:` (an average of the weights ...)", the EMA's words, which
    would clip nine steps in ten not at all."""
    from gpubottle.analysis.tensor_loops import GRADS_LOOP

    top = StackFrameShare("for p in model.parameters():", "train.py:19", 0.3, called_at="train.py:19",
                          kind=GRADS_LOOP)
    [fix] = words.overhead_fixes(LoopOverhead(top, [], 0.6, 200, 10, 0.0048, 0.0035))
    assert fix.text.startswith("for p in model.parameters(): takes 30% of each 4.8 ms step, and the "
                               "training needs it at every step: its time is " + GRADS_LOOP), fix.text
    assert "torch._foreach_norm(grads)" in fix.text and fix.text.endswith("try it and time it")
    assert not fix.change and fix.expected_step_s is None


def test_work_of_a_known_kind_leads_with_its_remedy_and_less_often_is_second() -> None:
    """A best-weights deepcopy each step: copying tensors instead keeps every call; "every 10
    steps" may change what the copy was for, so it comes second, and is not called logging."""
    top = StackFrameShare("best = copy.deepcopy(model.state_dict())", "train.py:20", 0.16,
                          called_at="train.py:20", kind="copying Python objects (copy.deepcopy)")
    cheaper, less = words.overhead_fixes(LoopOverhead(top, [], 0.7, 116, 10, 0.0043, 0.0037))
    assert cheaper.text.startswith("its time is copying Python objects (copy.deepcopy): copy less often")
    assert less.change == {"call every (steps)": [1, 10]} and "logging" not in less.text
    untyped = StackFrameShare("Tracker.log", "train.py:14", 0.4, called_at="train.py:33")
    first, _ = words.overhead_fixes(LoopOverhead(untyped, [], 0.5, 80, 10, 0.01, 0.0064))
    assert first.change == {"call every (steps)": [1, 10]} and "logging and metrics" in first.text


def test_a_loss_statement_named_by_its_line_is_told_its_time_is_its_ops() -> None:
    """`loss = F.mse_loss(model(X[idx]), Y[idx])` named by its own line (its samples in the C ops
    it calls beside the forward: the rows' gather, the loss): no Python loop there to batch."""
    d = LoopOverhead(StackFrameShare("loss = nn.functional.mse_loss(model(X[idx]), Y[idx])",
                                     "train.py:13", 0.3, called_at="train.py:13", feeds_model=True,
                                     loss=True), [], 0.5, 60, 10, 0.0016, 0.0012)
    [fix] = words.overhead_fixes(d)
    assert "is the loss backward() trains on" in fix.text and "every 10 steps" not in fix.text
    assert "make the ops on that line cheaper" in fix.text, fix.text
    assert "Python loop" not in fix.text and "per-row picks" not in fix.text, fix.text
