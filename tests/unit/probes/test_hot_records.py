"""The hottest records packed as doubles (probes/hot_records.py): read back as the records they
stand for, in the order they were made among the others, and holding no object alive meanwhile."""

from __future__ import annotations

import gc
import json
import math
import sys

from gpubottle.probes import hot_records as hr
from gpubottle.probes.recorder import Recorder
from gpubottle.wire import Backward, Batch, IterStarted, OptimizerStep, Stop

THREAD = 140_234_567_890_123  # a pthread ident (an address, under 2**53)
OPT_ID = 139_634_196_234_512  # id() of an optimizer


def test_each_record_reads_back_as_it_was_packed_none_included():
    chunk = hr.packed()
    chunk.extend((hr.BATCH, 3, 10.5, 10.75, 0.001, 0, hr.NAN, THREAD))
    chunk.extend((hr.BATCH, 1, 11.0, 11.25, hr.NAN, 1, 0.0005, hr.NAN))
    chunk.extend((hr.OPTIMIZER_STEP, OPT_ID, 12.0, hr.NAN, hr.NAN))
    chunk.extend((hr.OPTIMIZER_STEP, OPT_ID, 13.0, 12.5, THREAD))
    chunk.extend((hr.BACKWARD, 14.0, 14.5))
    assert hr.unpack(chunk) == [
        Batch(3, 10.5, 10.75, 0.001, 0, None, THREAD),
        Batch(1, 11.0, 11.25, None, 1, 0.0005, None),
        OptimizerStep(OPT_ID, 12.0, None, None),
        OptimizerStep(OPT_ID, 13.0, 12.5, THREAD),
        Backward(14.0, 14.5),
    ]
    assert hr.count(chunk) == 5
    got = hr.unpack(chunk)
    # Ids stay ints (the analysis keys optimizers and threads by them), exact.
    assert type(got[0].loader) is int and got[0].thread == THREAD and got[2].opt == OPT_ID


def test_an_unknown_code_or_a_cut_record_ends_the_chunk_without_an_error():
    chunk = hr.packed()
    chunk.extend((hr.BACKWARD, 1.0, 2.0, 99.0, 5.0, hr.BACKWARD, 3.0, 4.0))
    assert hr.unpack(chunk) == [Backward(1.0, 2.0)] and hr.count(chunk) == 1
    cut = hr.packed()
    cut.extend((hr.BACKWARD, 1.0, 2.0, hr.OPTIMIZER_STEP, 7.0))
    assert hr.unpack(cut) == [Backward(1.0, 2.0)] and hr.count(cut) == 1  # (counted as read)


def _lines(path) -> list[list]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_the_file_keeps_the_order_of_packed_and_other_records(tmp_path):
    path = tmp_path / "e.jsonl"
    rec = Recorder(str(path), start_thread=False)
    rec.emit(IterStarted(1, 1.0, [], 1))
    rec.hot((hr.BATCH, 1, 1.0, 1.1, hr.NAN, 0, hr.NAN, hr.NAN))
    rec.hot((hr.BACKWARD, 1.2, 1.3))
    rec.emit(Stop("steps", 1.35))  # after two packed ones: written after them
    rec.hot((hr.OPTIMIZER_STEP, OPT_ID, 1.4, 1.35, hr.NAN))
    assert rec.pending == 5
    rec.flush()
    rec.hot((hr.BACKWARD, 2.0, 2.1))
    rec.close()
    tags = [line[0] for line in _lines(path)]
    assert tags == ["iter", "b", "w", "stop", "o", "w"], tags
    assert rec.written == 6 and rec.pending == 0


def test_a_new_file_starts_without_the_last_ones_packed_records(tmp_path):
    rec = Recorder(str(tmp_path / "a.jsonl"), start_thread=False)
    rec.hot((hr.BACKWARD, 1.0, 2.0))
    rec.close()
    rec.hot((hr.BACKWARD, 3.0, 4.0))  # a hook racing the close: dropped with the old file
    rec.reopen(str(tmp_path / "b.jsonl"))
    rec.hot((hr.BACKWARD, 5.0, 6.0))
    rec.close()
    assert [x[1:] for x in _lines(tmp_path / "a.jsonl")] == [[1.0, 2.0]]
    assert [x[1:] for x in _lines(tmp_path / "b.jsonl") if x[0] == "w"] == [[5.0, 6.0]]


def test_packed_records_keep_no_object_alive(tmp_path):
    """What the packing is for: records waiting for the flush as tuples keep three or four small
    objects each in the allocator's pools, among the script's own (measured: 16 threads building
    batches of floats took 7% more CPU a batch); packed, a thousand of them keep none."""
    rec = Recorder(str(tmp_path / "e.jsonl"), start_thread=False)
    rec.hot((hr.BACKWARD, 0.0, 0.0))  # the array's first block
    counts = []
    # The process's blocks: the earlier tests' garbage, freed by a collection inside a span, and
    # another thread's allocations in it (pytest-xdist's message thread, as its scheduler hands out
    # tests) move them too: no collection while measuring, and the least of a few spans.
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            base = sys.getallocatedblocks()
            for i in range(1000):
                t = i * 1e-3 + math.pi
                rec.hot((hr.BACKWARD, t, t + 1e-4))
            counts.append(sys.getallocatedblocks() - base)
        packed_blocks = min(counts)
        base = sys.getallocatedblocks()
        kept = []  # the same as tuples, held as the buffer held them
        for i in range(1000):
            t = i * 1e-3 + math.pi
            kept.append(Backward(t, t + 1e-4))
        tuple_blocks = sys.getallocatedblocks() - base
    finally:
        gc.enable()
    assert tuple_blocks >= 2000  # the measure sees them: a tuple and two floats each
    assert packed_blocks < 20, packed_blocks
    rec.close()


def test_a_record_made_inside_emit_in_the_same_thread_never_waits_for_itself(tmp_path):
    """A signal handler of the script's (a checkpoint saved on SIGTERM: a record) can run while the
    same thread is inside emit(), with the packed records being moved: it must not wait forever."""
    import threading

    rec = Recorder(str(tmp_path / "e.jsonl"), start_thread=False)
    rec.hot((hr.BACKWARD, 1.0, 2.0))

    def inside() -> None:
        with rec._lock:  # where the handler would find it
            rec.emit(Stop("steps", 3.0))

    t = threading.Thread(target=inside, daemon=True)
    t.start()
    t.join(5.0)
    assert not t.is_alive()
    rec.close()
    assert [x[0] for x in _lines(tmp_path / "e.jsonl")] == ["w", "stop"]
