"""Which part of the step a main-thread sample is in, and which of the loop's own functions takes the
time outside the model, on stacks named as py-spy names them (frames copied from a real run of
tests/scripts/phases/heavy_logging.py at --stack-rate 40 beside two busy programs: its log_metrics
called model.named_parameters(), a Module method, and that one sample made it part of the model's
forward; the verdict lost its loop-overhead finding)."""

from __future__ import annotations

import pytest
from conftest import SCRIPTS
from script_lines import line_of

from gpubottle.analysis.loop_time import named_time
from gpubottle.analysis.stacks import Frame, phase_of

SITE = "/venv/lib/python3.11/site-packages/torch"
SCRIPT = str(SCRIPTS / "phases" / "heavy_logging.py")
MAIN = Frame("main", SCRIPT, 41)
LOG = Frame("log_metrics", SCRIPT, 16)
CALL = [Frame("Module._wrapped_call_impl", f"{SITE}/nn/modules/module.py", 1778),
        Frame("Module._call_impl", f"{SITE}/nn/modules/module.py", 1789)]
BACKWARD = [Frame("Tensor.backward", f"{SITE}/_tensor.py", 623),
            Frame("backward", f"{SITE}/autograd/__init__.py", 395),
            Frame("_engine_run_backward", f"{SITE}/autograd/graph.py", 979)]
STEP = [Frame("Optimizer.profile_hook_step.<locals>.wrapper", f"{SITE}/optim/optimizer.py", 514)]
NAMED = [Frame("Module.named_parameters", f"{SITE}/nn/modules/module.py", 2720),
         Frame("Module._named_members", f"{SITE}/nn/modules/module.py", 2655)]
TENSOR_ITER = [Frame("Tensor.__iter__", f"{SITE}/_tensor.py", 1180)]


def test_the_step_s_parts_are_the_module_call_and_the_autograd_entry_points():
    assert phase_of([MAIN, *CALL]) == "forward"
    assert phase_of([MAIN, *BACKWARD]) == "backward"
    assert phase_of([MAIN, Frame("grad", f"{SITE}/autograd/__init__.py", 500)]) == "backward"
    assert phase_of([MAIN, *STEP]) == "optimizer"
    # Module and Tensor methods the loop's own code calls are the loop's, not the model's.
    assert phase_of([MAIN, LOG, *NAMED]) == "other"
    assert phase_of([MAIN, LOG, *TENSOR_ITER]) == "other"


def test_logging_that_walks_the_parameters_is_named_outside_the_model():
    stacks = ([[MAIN, *CALL]] * 5 + [[MAIN, *BACKWARD]] * 4 + [[MAIN, *STEP]] * 3
              + [[MAIN, LOG]] * 80 + [[MAIN, LOG, *NAMED]] * 3 + [[MAIN, LOG, *TENSOR_ITER]] * 2)
    (top, *_) = named_time(stacks)
    assert top.function == "log_metrics" and top.share > 0.8


def test_the_loop_is_known_when_no_sample_fell_in_the_model():
    """On a fast machine 300 steps of 6 ms at 40 samples a second left 74 samples, two of them in
    the model or none: with none, `main` (in every sample) was named as the loop's own code, also
    when some samples were in main's own lines."""
    helper = Frame("_stats", SCRIPT, 12)
    # ... and a few in the loop's own line (float(loss)), where main calls nothing of the user's.
    stacks = [[MAIN, LOG]] * 70 + [[MAIN, LOG, *NAMED]] * 3 + [[MAIN, LOG, helper]] * 2 + [[MAIN]] * 3
    (top, *_) = named_time(stacks)
    assert top.function == "log_metrics" and top.share > 0.9
    # The loop's own code with nothing below it is named as it is: main holds the training loop
    # (its own code calls backward()), so by its statement, as the script's top level would be.
    (top, *_) = named_time([[MAIN]] * 10)
    assert top.function == "opt.step()" and top.location.endswith("heavy_logging.py:41"), top


def test_a_helper_busy_in_its_own_comprehension_is_named_with_the_loops_call():
    """tests/scripts/metrics_loop.py in a fresh clone's suite: its 56 main-thread samples all outside
    the model (a step of well under a millisecond), every one in per_sample_metrics' list
    comprehension. The helper "called" the comprehension in every sample, so it was taken for the
    loop's own code and the comprehension was named, with "call it every 10 steps" put at line 22
    inside the helper instead of at the loop's call."""
    metrics = Frame("per_sample_metrics", SCRIPT, 22)
    comp = Frame("per_sample_metrics.<locals>.<listcomp>", SCRIPT, 22)
    module = Frame("<module>", SCRIPT, 34)
    stacks = [[module, metrics, comp]] * 40 + [[module, metrics]] * 10 + [[module]] * 6
    (top, *_) = named_time(stacks)
    assert top.function == "per_sample_metrics" and top.share > 0.85
    assert (top.called_at or "").endswith("heavy_logging.py:34")


def test_a_helper_one_torn_sample_put_in_the_model_is_not_the_loop():
    """The same script in a fresh clone's suite again: the top level in the model's phases in 22% of
    its samples (under the 25% that says "the loop's own"), and one of per_sample_metrics' samples
    joined to the backward that followed (py-spy reads without stopping the thread). Every function
    that led there at all was then the loop's own: the helper too, and its comprehension was named,
    its fix at line 22 inside it."""
    metrics = Frame("per_sample_metrics", SCRIPT, 22)
    comp = Frame("per_sample_metrics.<locals>.<listcomp>", SCRIPT, 22)
    module = Frame("<module>", SCRIPT, 34)
    stacks = ([[module, *CALL]] * 4 + [[module, *BACKWARD]] * 7 + [[module, *STEP]] * 5
              + [[module, metrics, *BACKWARD]] + [[module, metrics, comp]] * 40 + [[module, metrics]] * 16)
    (top, *_) = named_time(stacks, only_other=True)
    assert top.function == "per_sample_metrics" and top.called_at and top.called_at.endswith(":34")


def test_a_helper_torn_into_the_optimizer_beside_a_top_level_seldom_there_is_not_the_loop():
    """tests/scripts/metrics_loop.py at 20 samples a second: 34-38 main-thread samples, the top
    level in the model's phases in 0-10 of them, and now and then one of per_sample_metrics'
    samples read over the optimizer step it followed (measured: <module>:34, per_sample_metrics:17,
    record_function.__exit__, sgd). With the top level there in 2 samples of 40, both functions led
    there "half as often as the most", the helper was the loop's own and its comprehension was
    named, its fix at line 22 inside it (the suite, 1 in 7)."""
    metrics = Frame("per_sample_metrics", SCRIPT, 17)
    comp = Frame("per_sample_metrics.<locals>.<listcomp>", SCRIPT, 22)
    module = Frame("<module>", SCRIPT, 34)
    torn = [module, metrics, Frame("record_function.__exit__", f"{SITE}/autograd/profiler.py", 950),
            Frame("sgd", f"{SITE}/optim/sgd.py", 306)]
    stacks = [[Frame("<module>", SCRIPT, 33), *STEP], torn] + [[module, metrics, comp]] * 30 \
        + [[module, metrics]] * 6 + [[module]] * 2
    (top, *_) = named_time(stacks)
    assert top.function == "per_sample_metrics" and (top.called_at or "").endswith(":34"), top


def test_a_generator_making_the_batches_is_input_not_code_to_call_every_10_steps():
    """tests/scripts/generator_loop.py (no DataLoader): 81 main-thread samples, most in batches()
    -> make_sample, pulled by the loop's `for x, y in batches(...)`. That is the run's input (the
    no-DataLoader finding says so); named as loop-overhead too, it got "wrap the call at line 26 in
    `if step % 10 == 0:`", advice that would train on a tenth of the batches."""
    from gpubottle.analysis.stack_users import making_batches, stack_evidence
    from gpubottle.analysis.stacks import ThreadSamples

    gen = str(SCRIPTS / "generator_loop.py")
    runpy = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", gen, 26)]
    making = [*runpy, Frame("batches", gen, 20), Frame("make_sample", gen, 13)]
    stacks = [making] * 66 + [[*runpy, *CALL]] * 5 + [[*runpy, *BACKWARD]] * 8 + [[*runpy, *STEP]] * 2
    assert len(making_batches(stacks)) == 66
    ev = stack_evidence({1: ThreadSamples(1, stacks)}, 1, set(), None)
    assert ev.main_loop_input_share is not None and ev.main_loop_input_share > 0.8
    assert not any(s.function == "batches" for s in ev.main_outside_model), ev.main_outside_model
    # Without the loop pulling from it, the same helper is the loop's own code, named as before.
    called = [[Frame("<module>", gen, 27), Frame("batches", gen, 20), Frame("make_sample", gen, 13)]]
    (top, *_) = named_time(called * 66 + [[runpy[1], *CALL]] * 5)
    assert top.function == "batches"


def test_a_helper_whose_result_the_model_trains_on_is_marked_as_feeding_it():
    """tests/scripts/real_code/loop_augment.py: `x, y = mix_rows(x, y, rng)` then
    `loss = ...(model(x), y)`: mix_rows is the loop's own code, and what it returns feeds the model
    (no "call it every 10 steps" for it); a logging helper beside it does not."""
    aug = str(SCRIPTS / "real_code" / "loop_augment.py")
    runpy = [Frame("_run_code", "<frozen runpy>", 88)]
    mixing = [*runpy, Frame("<module>", aug, 35), Frame("mix_rows", aug, 18)]
    forward = [*runpy, Frame("<module>", aug, 36), *CALL]
    backward = [*runpy, Frame("<module>", aug, 38), *BACKWARD]
    (top, *_) = named_time([mixing] * 40 + [forward] * 8 + [backward] * 4)
    assert top.function == "mix_rows" and top.feeds_model
    assert (top.called_at or "").endswith("loop_augment.py:35")
    # The same helper called for its side effects only (a bare call) does not feed the model.
    logging = [*runpy, Frame("<module>", aug, 37), Frame("mix_rows", aug, 18)]
    (top, *_) = named_time([logging] * 40 + [forward] * 8)
    assert top.function == "mix_rows" and not top.feeds_model


def test_a_c_call_on_the_loops_own_line_is_named_by_its_statement():
    """tests/scripts/real_code/gc_every_step.py, as py-spy sampled it: 228 of 230 main-thread samples
    were `<module>` at the `gc.collect()` line, with no Python frame beneath (a C call). No user
    function held them: the time went unnamed and the verdict said "run the math faster"."""
    path = SCRIPTS / "real_code" / "gc_every_step.py"
    script = str(path)
    line = line_of(path, "gc.collect()", whole=True)
    runpy = [Frame("_run_code", "<frozen runpy>", 88)]
    collecting = [*runpy, Frame("<module>", script, line)]
    forward = [*runpy, Frame("<module>", script, line - 5), *CALL]
    (top, *_) = named_time([collecting] * 228 + [forward] * 2)
    assert top.function == "gc.collect()" and top.share > 0.98
    assert top.location.endswith(f"gc_every_step.py:{line}") and top.called_at == top.location
    assert top.kind == "a full garbage collection (gc.collect)"
    # A line of the loop's own that is no known call is named by its statement where it holds a
    # large share by itself (`hard = np.argsort(scores)[-256:]`: most of each step, once read as
    # "not pinned to one function"); with a few samples (py-spy's torn reads) it stays unnamed.
    plain = [*runpy, Frame("<module>", script, line - 4)]
    (top, *_) = named_time([plain] * 50 + [forward] * 2)
    assert top.function == "opt.zero_grad()" and top.kind is None and top.share > 0.9, top
    assert named_time([plain] * 5 + [forward] * 45) == []


def test_library_work_of_a_known_kind_on_the_loops_own_line_is_named_by_its_statement():
    """tests/scripts/real_code/print_tensors.py, as py-spy sampled it: `print(step, loss, out[:8])`
    formats tensors in torch/_tensor_str.py (3 samples) and writes the line in C (5 samples on the
    line alone). No user function held either: now all 8 are that statement's, with its kind."""
    path = SCRIPTS / "real_code" / "print_tensors.py"
    script = str(path)
    line = line_of(path, "    print(step", start=True)
    runpy = [Frame("_run_code", "<frozen runpy>", 88)]
    at = [*runpy, Frame("<module>", script, line)]
    formatting = [*at, Frame("Tensor.__repr__", f"{SITE}/_tensor.py", 564),
                  Frame("_str", f"{SITE}/_tensor_str.py", 715)]
    forward = [*runpy, Frame("<module>", script, line - 5), *CALL]
    (top, *_) = named_time([at] * 5 + [formatting] * 3 + [forward] * 4)
    assert top.function == "print(step, loss, out[:8])" and top.share == round(8 / 12, 4)
    assert top.kind == "formatting tensors as text (print, str, f-strings)"
    # The same line writing plain numbers only (no known work in any sample) is named with no kind
    # where it holds a large share (5 of 9 here), unnamed with a few of its samples.
    (top, *_) = named_time([at] * 5 + [forward] * 4)
    assert top.function == "print(step, loss, out[:8])" and top.kind is None, top
    assert named_time([at] * 1 + [forward] * 12) == []
    # A line whose samples are in torch's functions beneath it is the model's math (its loss).
    loss = [*runpy, Frame("<module>", script, line), Frame("cross_entropy", f"{SITE}/nn/functional.py", 3400)]
    assert named_time([loss] * 5 + [forward] * 4) == []


def test_a_helper_seen_under_the_model_in_a_few_torn_samples_is_still_the_loops_code():
    """py-spy reads the thread's frames without stopping it: now and then a sample joins a helper
    that had just returned (weighted_loss) to the model call that followed. Three such samples of
    39 made the helper "the loop's own" (it led into the model), and its time went unnamed."""
    script = str(SCRIPTS / "real_code" / "loss_per_sample.py")
    runpy = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", script, 34)]
    helper = Frame("weighted_loss", script, 26)
    stacks = ([[*runpy, helper]] * 36 + [[*runpy, helper, *CALL]] * 3 + [[*runpy, *CALL]] * 10
              + [[*runpy, *BACKWARD]] * 50)
    (top, *_) = named_time(stacks)
    assert top.function == "weighted_loss" and top.share == pytest.approx(36 / 99, abs=0.01)
    assert top.loss  # loss = weighted_loss(model(xb), yb); loss.backward()


def test_a_loop_blocked_on_a_queue_waits_for_a_producer_and_is_not_making_batches(tmp_path) -> None:
    """A loop fed by a producer process through a multiprocessing queue (measured: 23 of 24 main
    samples blocked receiving, under the loop's `item = q.get()`; the producer busy in its own
    function): the wait and the line, and the producer's work; a full queue's put, blocked, is
    the loop's output, not its input."""
    from gpubottle.analysis.producers import producer_evidence, waiting_for_input
    from gpubottle.analysis.stack_users import making_batches, stack_evidence
    from gpubottle.analysis.stacks import ThreadSamples

    script = tmp_path / "train.py"
    script.write_text("def produce(q):\n    rows = [make(i) for i in range(99)]\n\n"
                      "while True:\n    item = q.get()\n    log_q.put(item)\n")
    import os
    import queue

    user, lib = str(script), os.path.dirname(queue.__file__)  # the interpreter's own library
    runpy = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", user, 5)]
    recv = [Frame("Queue.get", f"{lib}/multiprocessing/queues.py", 103),
            Frame("Connection.recv_bytes", f"{lib}/multiprocessing/connection.py", 216),
            Frame("Connection._recv", f"{lib}/multiprocessing/connection.py", 395)]
    put = [Frame("<module>", user, 6), Frame("Queue.put", f"{lib}/queue.py", 140),
           Frame("Condition.wait", f"{lib}/threading.py", 327)]
    stacks = [runpy + recv] * 23 + [[*runpy[:1], *put]] * 3 + [[*runpy, *BACKWARD]] * 4
    assert len(waiting_for_input(stacks)) == 23 and making_batches(stacks) == []
    ev = stack_evidence({1: ThreadSamples(1, stacks)}, 1, set(), None)
    producer = [[Frame("BaseProcess.run", f"{lib}/multiprocessing/process.py", 108),
                 Frame("produce", user, 2)]] * 9 + [[Frame("produce", user, 2), *recv]]
    producer_evidence(ev, stacks, {7: ThreadSamples(7, producer)})
    assert ev.main_wait_share == pytest.approx(23 / 30, abs=1e-4) and ev.main_wait_from_process
    assert (ev.main_wait_site or "").endswith("train.py:5") and ev.main_wait_statement == "item = q.get()"
    assert ev.producer_samples == 10 and ev.producer_busy == pytest.approx(0.9)
    assert ev.producer_hot == "produce" and (ev.producer_hot_site or "").endswith("train.py:2")


def test_a_loop_waiting_on_a_thread_pool_names_the_pools_function_not_its_comprehension(tmp_path) -> None:
    """`list(pool.map(make_sample, idx))` (tests/scripts/real_code/threadpool_batches.py): the main
    thread waits in a future's result, a receive; the pool's idle threads sit in thread.py's
    _worker (its queue's get is C), blocked; the busy ones are make_sample's, whose comprehension
    is its own work."""
    import concurrent.futures
    import os

    from gpubottle.analysis.producers import producer_evidence, producer_threads
    from gpubottle.analysis.stack_users import stack_evidence
    from gpubottle.analysis.stacks import ThreadSamples

    script = tmp_path / "train.py"
    script.write_text("def make_sample(i):\n    row = [f(j) for j in range(256)]\n    return row\n\n"
                      "for step in range(9):\n    samples = list(pool.map(make_sample, idx))\n")
    user = str(script)
    lib = os.path.dirname(concurrent.futures.__file__)
    threading_py = os.path.join(os.path.dirname(lib), "..", "threading.py")
    base = f"{lib}/_base.py"
    wait = [Frame("<module>", user, 6), Frame("Executor.map.<locals>.result_iterator", base, 619),
            Frame("_result_or_cancel", base, 317), Frame("Future.result", base, 451),
            Frame("Condition.wait", os.path.normpath(threading_py), 327)]
    stacks = [wait] * 12 + [[Frame("<module>", user, 6), *BACKWARD]] * 8
    ev = stack_evidence({1: ThreadSamples(1, stacks)}, 1, set(), None)
    producer_evidence(ev, stacks, {})
    assert ev.main_wait_share == pytest.approx(0.6) and ev.main_wait_from_process is False
    assert (ev.main_wait_site or "").endswith("train.py:6")
    run = [Frame("Thread._bootstrap", os.path.normpath(threading_py), 995),
           Frame("_worker", f"{lib}/thread.py", 81)]
    busy = [*run, Frame("_WorkItem.run", f"{lib}/thread.py", 58), Frame("make_sample", user, 2),
            Frame("make_sample.<locals>.<listcomp>", user, 2)]
    producer_threads(ev, ThreadSamples(1, [run] * 30 + [busy] * 6 + [busy[:-1]] * 2))
    assert ev.producer_samples == 38 and ev.producer_busy == pytest.approx(8 / 38, abs=1e-4)
    assert ev.producer_hot == "make_sample" and ev.producer_hot_share == 1.0
    assert (ev.producer_hot_site or "").endswith("train.py:2")


def test_a_loop_waiting_on_a_process_pool_names_the_workers_function_above_their_start(tmp_path) -> None:
    """`pool.map(make_sample, idx)` with a multiprocessing.Pool: the main thread waits in
    pool.py's result wait; a forked worker's stack holds the script's own frames beneath its
    start (main at its `with Pool(2)` line), which are not where it makes the batches."""
    import multiprocessing
    import os

    from gpubottle.analysis.producers import producer_evidence
    from gpubottle.analysis.stack_users import stack_evidence
    from gpubottle.analysis.stacks import ThreadSamples

    script = tmp_path / "train.py"
    script.write_text("def make_sample(i):\n    return [f(j) for j in range(256)]\n\n"
                      "def main():\n    with Pool(2) as pool:\n        for step in range(9):\n"
                      "            samples = pool.map(make_sample, idx)\n")
    user, lib = str(script), os.path.dirname(multiprocessing.__file__)
    threading_py = os.path.normpath(os.path.join(lib, "..", "threading.py"))
    main = [Frame("<module>", user, 9), Frame("main", user, 7)]
    wait = [*main, Frame("Pool.map", f"{lib}/pool.py", 367), Frame("MapResult.get", f"{lib}/pool.py", 768),
            Frame("ApplyResult.wait", f"{lib}/pool.py", 765), Frame("Event.wait", threading_py, 629),
            Frame("Condition.wait", threading_py, 327)]
    stacks = [wait] * 10 + [[*main, *BACKWARD]] * 10
    ev = stack_evidence({1: ThreadSamples(1, stacks)}, 1, set(), None)
    forked = [Frame("<module>", user, 9), Frame("main", user, 5),
              Frame("Pool.__init__", f"{lib}/pool.py", 215),
              Frame("Process._bootstrap", f"{lib}/process.py", 314),
              Frame("worker", f"{lib}/pool.py", 125), Frame("mapstar", f"{lib}/pool.py", 48)]
    sending = [*forked[:-1], Frame("_ConnectionBase.send_bytes", f"{lib}/connection.py", 200),
               Frame("Connection._send", f"{lib}/connection.py", 384)]
    making = [*forked, Frame("make_sample", user, 2), Frame("make_sample.<locals>.<listcomp>", user, 2)]
    producer_evidence(ev, stacks, {7: ThreadSamples(7, [making] * 4 + [sending] * 6)})
    assert ev.main_wait_share == pytest.approx(0.5) and ev.main_wait_from_process
    assert ev.producer_hot == "make_sample" and ev.producer_hot_share == pytest.approx(0.4)


def test_samples_inside_a_checkpoint_save_are_the_checkpoints_wherever_their_time_falls() -> None:
    """Beside busy programs py-spy's timeline drifted: 30% of a loop's step samples fell inside
    torch.save, whose spans the probes had carved out, and the save was named as the loop's own
    code beside the checkpoint finding. Those samples leave the steps' stacks; others stay."""
    from gpubottle.analysis.stacks import ThreadSamples, without_saves

    train = Frame("<module>", "/w/train.py", 40)
    save = [train, Frame("save", f"{SITE}/serialization.py", 966),
            Frame("_save", f"{SITE}/serialization.py", 1200)]
    dcp = [train, Frame("save", f"{SITE}/distributed/checkpoint/state_dict_saver.py", 60)]
    stacks = [save, [train, *BACKWARD], dcp, [train, *CALL]]
    (ts,) = without_saves({1: ThreadSamples(1, stacks, [0.0, 1.0, 2.0, 3.0])}).values()
    assert [st[1].name for st in ts.stacks] == [BACKWARD[0].name, CALL[0].name] and ts.times == [1.0, 3.0]


def test_samples_inside_torchs_collate_are_counted_among_those_making_batches() -> None:
    """Frames as py-spy named them in a run of tests/scripts/real_code/number_lists.py (each sample
    a list of 256 floats): the loop's `for` line, the DataLoader's fetch, default_collate and its
    per-position list comprehension. A wait blocked on the workers' queue makes nothing; a worker's
    sample in collate counts on the workers' side."""
    from gpubottle.analysis.stack_users import stack_evidence
    from gpubottle.analysis.stacks import ThreadSamples

    data = f"{SITE}/utils/data"
    runpy = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", SCRIPT, 37)]
    nxt = [Frame("_BaseDataLoaderIter.__next__", f"{data}/dataloader.py", 733),
           Frame("_SingleProcessDataLoaderIter._next_data", f"{data}/dataloader.py", 789)]
    fetch = Frame("_MapDatasetFetcher.fetch", f"{data}/_utils/fetch.py", 55)
    collate = [fetch, Frame("default_collate", f"{data}/_utils/collate.py", 398),
               Frame("collate", f"{data}/_utils/collate.py", 212),
               Frame("collate.<locals>.<listcomp>", f"{data}/_utils/collate.py", 212),
               Frame("collate_float_fn", f"{data}/_utils/collate.py", 288)]
    getitem = [fetch, Frame("Rows.__getitem__", SCRIPT, 28)]
    blocked = [Frame("_MultiProcessingDataLoaderIter._get_data", f"{data}/dataloader.py", 1300),
               Frame("Queue.get", "/usr/lib/python3.11/multiprocessing/queues.py", 113),
               Frame("poll", "/usr/lib/python3.11/multiprocessing/connection.py", 257)]
    main = [runpy + nxt + collate] * 9 + [runpy + nxt + getitem] + [runpy + nxt + blocked] * 4 \
        + [runpy + CALL] * 5
    loop = [Frame("_worker_loop", f"{data}/_utils/worker.py", 349)]
    worker = [loop + collate[1:]] * 6 + [loop + getitem] * 2 + [loop + blocked[1:]] * 12
    ev = stack_evidence({1: ThreadSamples(1, main), 2: ThreadSamples(2, worker)}, 1, {2}, None)
    assert (ev.main_making, ev.main_collate) == (10, 9)
    assert (ev.worker_making, ev.worker_collate) == (8, 6)


def test_a_train_function_holding_the_loop_has_its_lines_named_however_few_samples_reach_the_model():
    """tests/scripts/real_code/choice_in_train.py at py-spy's default rate: 61 samples, one of them
    in the model. train (whose own code calls backward()) was "the function the loop calls",
    main's call of it the place for `if step % 10 == 0:`; it holds the loop, and its line is said."""
    script = str(SCRIPTS / "real_code" / "choice_in_train.py")
    main = Frame("main", script, 31)
    train = Frame("train", script, 18)
    numpy_choice = [Frame("RandomState.choice", "/venv/lib/python3.11/site-packages/numpy/random/mtrand.pyx",
                          990)]
    model = [Frame("train", script, 20), *CALL]
    stacks = [[main, train, *numpy_choice]] * 60 + [[main, model[0], *model[1:]]]
    (top, *_) = named_time(stacks)
    assert top.function.startswith("idx = np.random.choice(")
    assert top.location.endswith("choice_in_train.py:18")
    assert top.called_at is not None and top.called_at.endswith("choice_in_train.py:18"), top


def test_a_lists_front_taken_in_the_loop_is_that_kind_and_must_run_every_step():
    """tests/scripts/real_code/replay_list.py on a host where its steps' rise went unseen: 32% of the
    samples on `buffer.pop(0)`, said as the loop's own code to be called every 10 steps (a buffer
    trimmed less often outgrows its capacity). Its kind, from the line, keeps every call and says
    the ring buffer."""
    from gpubottle.analysis.work_kinds import LIST_FRONT_WORK, every_step, remedy

    script = str(SCRIPTS / "real_code" / "replay_list.py")
    pop = Frame("<module>", script, 26)
    model = [Frame("<module>", script, 36), *CALL]
    (top, *_) = named_time([[pop]] * 12 + [model] * 20)
    assert top.function == "buffer.pop(0)" and top.kind == LIST_FRONT_WORK, top
    assert every_step(top.kind) and "ring buffer" in (remedy(top.kind) or "")
