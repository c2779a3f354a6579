"""The input rules decide (tested by their decisions' fields), and their wording speaks (tested here,
once per sentence form)."""

from __future__ import annotations

from factories import evidence

from gpubottle.evidence import Evidence, StackEvidence
from gpubottle.rules.common import main_loader
from gpubottle.rules.input import words
from gpubottle.rules.input.decide import LoaderState, Steady, decide_steady


def _decide(ev: Evidence) -> Steady:
    w = ev.measured()
    lo = main_loader(ev)
    assert w is not None and lo is not None
    return decide_steady(ev, w, lo, w.mean_wait_s, 0.0)


def test_main_process_loading_with_idle_cores_is_decided_data_starved() -> None:
    d = _decide(evidence(step_s=0.1, wait_s=0.06, wait_cpu_s=0.06, main=1.0, tree=1.0, cores=8))
    assert d.category == "data-starved" and d.measured_cpu and not d.io_bound
    assert d.plan is not None and d.plan.workers == 2 and abs(d.speedup - 2.5) < 0.01


def test_saturated_workers_are_decided_preprocessing_bound() -> None:
    d = _decide(evidence(step_s=0.2, wait_s=0.1, num_workers=4, per_worker=0.95, main=0.3, tree=4.0,
                         cores=4, run_queue=0.3))
    assert d.category == "preprocessing-bound" and d.starved_of_cpu and d.mention_run_queue


def test_workers_blocked_on_reads_are_decided_io_bound() -> None:
    d = _decide(evidence(step_s=0.2, wait_s=0.1, num_workers=4, per_worker=0.1, main=1.5, tree=1.9,
                         cores=2, run_queue=0.02))
    assert d.category == "data-starved" and d.io_bound and d.state.blocked is not None
    assert d.state.blocked > 0.8


def test_a_trace_without_cpu_leaves_the_question_open() -> None:
    ev = evidence(step_s=0.1, wait_s=0.06)
    ev.cpu = None
    d = _decide(ev)
    assert not d.measured_cpu and d.category == "data-starved"
    q = words.unmeasured_question(d.category)
    assert "preprocessing-bound is not ruled out" in q and "`gpubottle run` measures it" in q


def _steady(category: str, io_bound: bool = False, measured: bool = True, busy: float | None = 0.2,
            run_queue: float | None = None) -> Steady:
    return Steady(category, 0.05, 0.0, LoaderState("workers", busy, run_queue), run_queue is not None,
                  None, io_bound, False, measured, False, None, 1.0)


def test_summaries_say_the_cause() -> None:
    ev = evidence(step_s=0.1, wait_s=0.05)
    lo = main_loader(ev)
    assert lo is not None
    say = words.steady_summary
    assert say(ev, 0.5, _steady("data-starved"), lo) == (
        "the training loop waits for data 50% of the time, and more loading in parallel would hide it")
    assert say(ev, 0.5, _steady("data-starved", io_bound=True, busy=0.1), lo) == (
        "the training loop waits for data 50% of the time, and the loader mostly waits on I/O "
        "(90% blocked)")
    assert say(ev, 0.5, _steady("data-starved", measured=False), lo) == (
        "the training loop waits for data 50% of the time; batches are made in the training process "
        "itself (num_workers=0)")
    assert say(ev, 0.5, _steady("preprocessing-bound"), lo).endswith("the per-sample work must get cheaper")
    ev.steps.source = "dataloader"  # no backward, no optimizer: not a training loop
    assert say(ev, 0.5, _steady("data-starved"), lo).startswith("the loop waits")
    assert words.restart_summary(ev, 0.4, 0.3) == (
        "the loop waits for data 40% of the time, 30% of it for DataLoader workers starting again at "
        "every epoch")


def test_facts_carry_names_and_values() -> None:
    ev = evidence(step_s=0.1, wait_s=0.05, num_workers=2, per_worker=0.4, tree=1.5, cores=4)
    got = words.steady_facts(ev, _steady("data-starved", busy=0.4, run_queue=0.25), workers=2)
    assert [(f.name, f.value) for f in got] == [
        ("loader_busy", 0.4), ("worker_run_queue", 0.25), ("run_cores", 1.5)]
    assert got[0].text == "while the loop waits, the workers are busy 40% of a core each"
    main = words.steady_facts(ev, _steady("data-starved", busy=0.9), workers=0)[0]
    assert main.text == ("while the loop waits, the main process is busy 90% of a core loading the "
                         "batch itself")
    w = ev.measured()
    assert w is not None
    fact = words.wait_fact(w)
    assert fact.name == "input_wait_share" and fact.value == 0.5
    assert fact.text.startswith("the loop waits 50.0 ms for its batch in a 100.0 ms step (50% of step time")
    assert words.wait_fact(w, 4).text.startswith(  # gradients accumulated over 4 of the loader's batches
        "the loop waits 50.0 ms for its 4 batches (gradients accumulated over them) in a 100.0 ms step")
    lo = main_loader(ev)
    assert lo is not None
    assert words.loader_fact(lo).text == ("DataLoader at train.py:42: num_workers=2, batch_size=32, "
                                          "dataset Images")
    lo.builds, lo.start_method = 3, "spawn"
    restart = words.restart_fact(lo, 0.25, 2)
    assert restart.name == "worker_start_share" and restart.value == 0.25
    assert restart.text.endswith("(2 restarts; the DataLoader is built 3 times, spawn)")
    lo.worker_init = "open_index (train.py:18)"  # what each start runs beyond the fork
    assert words.restart_fact(lo, 0.25, 2).text.endswith(
        "spawn); each worker runs its worker_init_fn, open_index (train.py:18), every time it starts")


def test_idle_workers_ahead_of_a_cpu_starved_main_are_not_io_bound_in_a_saved_run() -> None:
    """A run saved before the wait's run queue was measured (the whole run's instead). Measured
    beside two busy programs: 8 workers at 2% of a core, the main thread 52% of the time
    waiting for a core. The workers are ahead; more of them cannot help."""
    ev = evidence(step_s=0.0167, wait_s=0.0043, num_workers=8, per_worker=0.023, main=0.76, tree=0.93,
                  cores=2, run_queue=0.043, outside=1.06)
    assert ev.cpu is not None
    ev.cpu.main_run_queue = 0.52
    d = _decide(ev)
    assert d.consumer_starved and not d.io_bound and d.category == "preprocessing-bound"
    assert d.plan is None or d.plan.workers <= 8
    facts = words.steady_facts(ev, d, workers=8)
    assert ("main_run_queue", 0.52) in [(f.name, f.value) for f in facts]
    ev.cpu.main_run_queue = 0.05  # the same workers with a main that gets its core: waiting on I/O
    assert _decide(ev).io_bound


def test_a_wait_longer_than_the_main_s_run_queue_is_the_workers_lateness_in_a_saved_run() -> None:
    """Saved before the wait's run queue was measured. Workers on slow reads beside busy programs:
    the main thread waits for a core 40% of the time, the loop for data 83%: batches were not
    ready, the workers are behind (I/O), not ahead."""
    ev = evidence(step_s=0.12, wait_s=0.1, num_workers=1, per_worker=0.05, main=0.3, tree=0.4, cores=2,
                  run_queue=0.02, outside=1.5)
    assert ev.cpu is not None
    ev.cpu.main_run_queue = 0.4
    d = _decide(ev)
    assert not d.consumer_starved and d.io_bound and d.category == "data-starved"


def test_a_wait_spent_in_the_run_queue_is_cpu_starvation_not_slow_reads() -> None:
    """Measured beside four busy programs on 2 cores: a Python collate in 2 workers (17% busy, 28% in
    the run queue, the rest blocked), the loop's wait 18% on a CPU and 39% in the run queue. The
    whole run's main run queue (47%) is below the wait share (57%), which the saved-run rule read as
    the workers behind on I/O ("num_workers=6"). Timed alone, more workers are no faster."""
    ev = evidence(step_s=0.012, wait_s=0.0068, wait_cpu_s=0.0012, wait_run_queue_s=0.0027,
                  num_workers=2, per_worker=0.17, main=0.23, tree=0.53, cores=2, run_queue=0.28,
                  outside=1.45)
    assert ev.cpu is not None
    ev.cpu.main_run_queue = 0.47
    d = _decide(ev)
    assert d.consumer_starved and d.consumer_in_wait and not d.io_bound
    assert d.category == "preprocessing-bound"
    assert d.consumer_run_queue is not None and abs(d.consumer_run_queue - 0.397) < 0.01
    facts = {f.name: f.value for f in words.steady_facts(ev, d, workers=2)}
    assert facts["main_run_queue_in_wait"] == round(d.consumer_run_queue, 3)


def test_loaders_that_wait_on_reads_stay_io_bound_beside_busy_programs() -> None:
    """Measured beside four busy programs: 8 workers on 12 ms reads, the wait 5% on a CPU and 13% in
    the run queue (waking up for each batch), the rest blocked: the workers are behind."""
    ev = evidence(step_s=0.1, wait_s=0.068, wait_cpu_s=0.0036, wait_run_queue_s=0.0092,
                  num_workers=8, per_worker=0.015, main=0.2, tree=0.35, cores=2, run_queue=0.035,
                  outside=1.65)
    assert ev.cpu is not None
    ev.cpu.main_run_queue = 0.39  # above MAIN_CPU_STARVED over the whole run, yet not in the wait
    d = _decide(ev)
    assert not d.consumer_starved and d.io_bound and d.category == "data-starved"
    assert d.plan is not None and d.plan.workers > 8


def test_the_main_process_loading_itself_is_judged_by_its_run_queue_within_the_waits() -> None:
    """num_workers=0: the loader is the main thread, and its state over the waits is what it did
    then, not its run queue over the whole run."""
    ev = evidence(step_s=0.1, wait_s=0.06, wait_cpu_s=0.03, wait_run_queue_s=0.024, main=0.9, tree=1.0,
                  cores=2)
    assert ev.cpu is not None
    ev.cpu.main_run_queue = 0.05
    d = _decide(ev)
    assert d.state.run_queue is not None and abs(d.state.run_queue - 0.4) < 1e-9
    assert d.state.busy is not None and abs(d.state.busy - 0.5) < 1e-9


def test_workers_waiting_for_work_are_not_behind_on_reads() -> None:
    """Measured beside four busy programs on 2 cores (torch's threads waiting passively): a Python
    collate in 2 workers, the loop's wait 8% on a CPU and 31% in the run queue (under the consumer
    rule's 40%), the workers' stacks on their index queue 84-89% of the time. Read as behind on
    reads, it got 'num_workers=6'; loaders behind on reads (a 12 ms sleep a sample) have 0-20%
    there. (The workers' run queue is set under LOADER_QUEUED here, so only the stacks tell.)"""
    def collate(idle: float, samples: int = 19) -> Evidence:
        ev = evidence(step_s=0.0092, wait_s=0.0077, wait_cpu_s=0.0006, wait_run_queue_s=0.0024,
                      num_workers=2, per_worker=0.16, main=0.14, tree=0.36, cores=2, run_queue=0.08,
                      outside=1.6)
        assert ev.cpu is not None
        ev.cpu.main_run_queue = 0.38
        ev.stacks = StackEvidence(samples_main=14, samples_workers=samples, worker_idle_fraction=idle)
        return ev

    ev = collate(0.84)
    d = _decide(ev)
    assert not d.consumer_starved and d.workers_idle == 0.84
    assert not d.io_bound and d.category == "preprocessing-bound"
    facts = {f.name: f.value for f in words.steady_facts(ev, d, workers=2)}
    assert facts["workers_wait_for_work"] == 0.84
    assert _decide(collate(0.0)).io_bound  # workers in their reads: behind on I/O
    assert _decide(collate(0.84, samples=9)).io_bound  # too few stacks to tell


def test_workers_that_queue_for_a_core_when_they_work_are_not_behind_on_reads() -> None:
    """Without stacks: the same collate's workers used 12.6-22% of a core and waited for one 15-42%
    of the time, blocked the rest (on their queue, waiting for work); workers behind on reads beside
    four busy programs used 1-2% and waited 1-4% (19% beside the suite's runs)."""
    def loader(per_worker: float, run_queue: float) -> Steady:
        ev = evidence(step_s=0.0092, wait_s=0.0077, wait_cpu_s=0.0006, wait_run_queue_s=0.0024,
                      num_workers=2, per_worker=per_worker, main=0.14, tree=0.36, cores=2,
                      run_queue=run_queue, outside=1.6)
        return _decide(ev)

    d = loader(0.16, 0.21)
    assert not d.io_bound and d.starved_of_cpu and d.category == "preprocessing-bound"
    # At the edge, beside the suite's runs: 12.6% of a core, 14.9% run queue (read as reads before).
    d = loader(0.126, 0.149)
    assert not d.io_bound and d.category == "preprocessing-bound"
    assert loader(0.015, 0.02).io_bound
    # Behind on reads beside the suite's runs (a fresh clone): woken after each read, the worker
    # waited for a core 19% of the time but computed 1.7% of one.
    assert loader(0.017, 0.186).io_bound


def test_a_loader_built_every_epoch_gets_no_setting_to_change_only_its_call() -> None:
    """persistent_workers alone changes nothing on a loader built anew every epoch: the fix carries
    no change (which --patch would write and the user's terms would move to a --persistent flag)
    and stays at the DataLoader(...) call; a loader built once gets the setting."""
    from gpubottle.rules.input.fixes import restart_fix

    ev = evidence(step_s=0.1, wait_s=0.05, num_workers=2, per_worker=0.4)
    w = ev.measured()
    lo = main_loader(ev)
    assert w is not None and lo is not None
    once = restart_fix(lo, w, 0.03, 4)
    assert once.change == {"persistent_workers": [False, True]} and once.where == lo.site
    lo.builds = 4
    rebuilt = restart_fix(lo, w, 0.03, 4)
    assert rebuilt.change == {} and rebuilt.where == lo.site and "build it once" in rebuilt.text
    assert rebuilt.expected_step_s == once.expected_step_s


def test_workers_tried_near_the_cpu_limit_are_said_to_possibly_be_slower() -> None:
    """Two workers beside torch's two math threads on 2 cores made a JSON dataset's step 8.4 ->
    12.2 ms: the "try" says it can lose, and why."""
    from gpubottle.rules.input.words import try_workers_text

    text = try_workers_text(2, 1.14, 2)
    assert "up to 1.14x" in text and "or be slower" in text and "torch's 2 math threads" in text
    assert "or be slower" in try_workers_text(3, 1.1)


def test_the_workers_native_thread_pools_are_the_first_fix_where_they_wait_for_cores() -> None:
    """Half the workers' CPU in threads besides their main one (numpy's OpenBLAS, a thread per core
    in every worker), the workers waiting for a core half the time: one thread each, first. The
    share comes from the sampler's rows (each worker's process and main-thread CPU)."""
    from gpubottle.analysis.cpu import cpu_evidence
    from gpubottle.analysis.samples import Samples
    from gpubottle.collect.system import CoreBudget
    from gpubottle.rules import diagnose
    from gpubottle.wire import CpuSample

    samples = Samples()
    for i in range(10):
        samples.cpu.append(CpuSample(float(i), {"1": 0.1, "2": 0.9, "3": 0.9}, 2.0, 0.0,
                                     {"2": 0.5, "3": 0.5}, {"1": 0.1, "2": 0.45, "3": 0.45}))
    c = cpu_evidence(samples, 1, {2, 3}, CoreBudget(2, 2, None), None, 0.1)
    assert c.workers_pool_share == 0.5 and c.per_worker_run_queue == 0.5

    ev = evidence(step_s=0.2, wait_s=0.15, num_workers=2, per_worker=0.9, main=0.1, tree=1.9,
                  cores=2, run_queue=0.5)
    assert ev.cpu is not None
    ev.cpu.workers_pool_share = 0.5
    f = diagnose(ev).findings[0]
    assert f.fixes[0].text.startswith("each of the 2 workers computes on more threads than its own: "
                                      "50% of their CPU is in other threads"), f.fixes[0].text
    assert "OPENBLAS_NUM_THREADS=1" in f.fixes[0].text
    ev.cpu.workers_pool_share = 0.05  # a worker's own thread: nothing to say
    assert not any("more threads than its own" in x.text for x in diagnose(ev).findings[0].fixes)
    ev.cpu.workers_pool_share, ev.cpu.per_worker_run_queue, ev.cpu.tree_cores = 0.5, 0.05, 1.0
    assert not any("more threads than its own" in x.text  # (cores to spare: the pools fit)
                   for x in diagnose(ev).findings[0].fixes)
