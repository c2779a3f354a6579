"""The price of a hook that does not time itself, calibrated in the process (the account's hooks
part prices the rarer records with it)."""

from gpubottle.probes.recorder import Recorder, emit_cost


def test_a_rarer_hooks_price_is_measured():
    # A wrapper's call, two clock reads and a record: around a microsecond, never nothing.
    assert 0 < min(emit_cost() for _ in range(3)) < 1e-4


def test_timed_hooks_add_up(tmp_path):
    rec = Recorder(str(tmp_path / "e.jsonl"), start_thread=False)
    rec.timed_hook(2e-6)
    rec.timed_hook(3e-6)
    assert (rec.timed, round(rec.hooks_s, 9)) == (2, 5e-6)
    rec.close()


def test_a_hook_preempted_inside_counts_as_a_call_but_not_its_wait(tmp_path):
    rec = Recorder(str(tmp_path / "e.jsonl"), start_thread=False)
    rec.timed_hook(4e-6)
    rec.timed_hook(0.004)  # another process's timeslice, not the hook's work
    assert (rec.timed, round(rec.hooks_s, 9)) == (2, 4e-6)
    rec.close()


def test_a_new_use_of_the_recorder_starts_its_hooks_time_over(tmp_path):
    # gpubottle.profile() used again in one process: each use's account has its own hooks' time.
    rec = Recorder(str(tmp_path / "a.jsonl"), start_thread=False)
    rec.timed_hook(4e-6)
    rec.reopen(str(tmp_path / "b.jsonl"))
    assert (rec.timed, rec.hooks_s) == (0, 0.0)
    rec.close()


def test_a_collection_in_the_flush_is_the_scripts_not_the_writers(tmp_path, monkeypatch):
    # The flush's allocations may be the ones that set off a full collection of the script's
    # objects (87 ms of a torch process's, once in a run): the script's cost, not the writer's.
    import gc
    import time

    from gpubottle.probes import recorder
    from gpubottle.wire import Backward

    encode = recorder.encode_lines

    def encode_after_a_collection(records):  # as the threshold would have it, in the flush
        gc.collect()
        return encode(records)

    monkeypatch.setattr(recorder, "encode_lines", encode_after_a_collection)
    rec = Recorder(str(tmp_path / "e.jsonl"), start_thread=False)
    for i in range(200):
        rec.emit(Backward(float(i), float(i) + 0.5))
    heap = [[i] for i in range(400_000)]  # the script's objects
    c0 = time.thread_time()
    rec.flush()
    took = time.thread_time() - c0
    assert rec.written == 200 and len(heap) == 400_000
    assert took > 0.01  # the collection ran in the flush
    assert rec.writer_cpu_s < took / 4
    rec.close()


def test_a_collection_in_the_flush_is_gpubottles_where_the_script_runs_none_of_its_own(tmp_path, monkeypatch):
    # A loop that makes ~1 tracked object a step runs no collection after its imports; the flush's
    # allocations set off a full one (110 ms at 25-31 s of a 45-s memory loop): gpubottle's cost
    # then. Where the script collected on its own lately, it stays the script's (a fake clock).
    import gc
    import time

    from gpubottle.probes import recorder
    from gpubottle.wire import Backward

    encode = recorder.encode_lines
    monkeypatch.setattr(recorder, "encode_lines", lambda records: (gc.collect(), encode(records))[1])
    clock = [100.0]
    rec = Recorder(str(tmp_path / "e.jsonl"), start_thread=False, now=lambda: clock[0])
    heap = [[i] for i in range(400_000)]  # the script's objects

    def flushed() -> tuple[float, float]:
        for i in range(50):
            rec.emit(Backward(float(i), float(i) + 0.5))
        before, c0 = rec.writer_cpu_s, time.thread_time()
        rec.flush()
        return rec.writer_cpu_s - before, time.thread_time() - c0

    clock[0] += recorder.SCRIPT_GC_RECENT_S + 1  # none of the script's since the recorder began
    written, took = flushed()
    assert took > 0.01 and written > took / 2, (written, took)
    gc.collect()  # the script's own, in its thread
    clock[0] += 1
    written, took = flushed()
    assert took > 0.01 and written < took / 4, (written, took)
    assert len(heap) == 400_000
    rec.close()
    assert rec.gc_watch not in gc.callbacks
