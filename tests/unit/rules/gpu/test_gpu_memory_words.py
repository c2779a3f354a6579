"""The GPU-memory rules' words: each sentence form once, from decisions built by hand (the rule tests
in test_gpu_memory_rules.py assert the decisions)."""

from __future__ import annotations

from gpubottle.evidence import GraphGrowth, LeakEvidence, MemoryContents
from gpubottle.rules.gpu import memory_words as words
from gpubottle.rules.gpu.memory_decide import BatchChange, GpuGrowth, GpuMemory, Held, TraceMemory

GIB = 1 << 30


def _state(other: int | None = None, moment: str = "oom") -> MemoryContents:
    return MemoryContents(moment=moment, weights_bytes=2 * GIB, gradients_bytes=2 * GIB,
                          optimizer_state_bytes=4 * GIB, other_python_bytes=other, optimizers=["AdamW"])


def test_what_filled_the_memory() -> None:
    f = words.contents_fact(_state(), 40 * GIB)
    assert f is not None and f.name == "activation_share" and f.value == 0.8
    assert f.text == ("what filled it (at the OOM): weights 2.00 GiB, gradients 2.00 GiB, AdamW state "
                      "4.00 GiB, activations and other 32.00 GiB")
    f = words.contents_fact(_state(other=GIB, moment="step"), 40 * GIB)
    assert f is not None and f.text.startswith("what filled it (after warm-up, with the activations at "
                                               "their peak)")
    assert f.text.endswith("tensors referenced from Python (batches, outputs) 1.00 GiB, autograd's saved "
                           "activations and other 31.00 GiB")
    assert words.contents_fact(MemoryContents(moment="oom"), 40 * GIB) is None  # no state found


def test_tensors_held_from_python() -> None:
    fact, fix = words.held_words(Held("(1024,) float32", 10 * GIB, 60), 40 * GIB)
    assert fact.text == ("60 tensors of (1024,) float32 referenced from Python hold 10.00 GiB (25% of "
                         "the allocated memory)") and fact.value == 10 * GIB
    assert fix.text.startswith("something keeps 60 tensors of (1024,) float32 alive")
    fact, fix = words.held_words(Held("(4096, 4096) float32", 10 * GIB, 1), 40 * GIB)
    assert fact.text.startswith("one tensor of (4096, 4096) float32 referenced from Python holds")
    assert fix.text.startswith("the (4096, 4096) float32 tensor is 10.00 GiB: free it")


def test_batch_fixes_fitted_or_halved() -> None:
    fitted = words.batch_fix(BatchChange(32, 8, "train.py:42", 18 * GIB, 7 * GIB))
    assert fitted.text == ("lower the batch to 8 and accumulate gradients over 4 steps to keep the "
                           "effective batch (activations need 18.00 GiB at batch 32; 7.00 GiB is left "
                           "beside the model state)")
    assert fitted.change == {"batch_size": [32, 8]} and fitted.where == "train.py:42"
    halved = words.batch_fix(BatchChange(32, 16, None))
    assert halved.text.startswith("halve the batch") and halved.change == {"batch_size": [32, 16]}


def test_an_oom_s_facts_and_fixes_in_order() -> None:
    d = GpuMemory(True, "critical", 80 * GIB, 40 * GIB, 74 * GIB, GIB, "CUDA out of memory. Tried",
                  contents=_state(), held=Held("(1024,) float32", 10 * GIB, 60),
                  fragmentation_bytes=34 * GIB, others=[("GPU 0", 3 * GIB)],
                  batch=BatchChange(32, 16, "train.py:42"), state_share=0.3, moment_known=True,
                  suggest_snapshot=True)
    assert words.summary(d) == "the run died of CUDA out-of-memory"
    got = words.facts(d)
    assert [f.text.split(":")[0] for f in got[:2]] == ["the run died", "at that moment tensors held 40.00 "
                                                                          "GiB, the allocator reserved 74.00 "
                                                                          "GiB of 80.00 GiB, 1.00 GiB free"]
    assert [f.name for f in got[2:5]] == ["activation_share", "held_from_python", "fragmentation_bytes"]
    assert got[5].text == "other processes held up to 3.00 GiB on GPU 0"
    fixes = [f.text.split(" ")[0] for f in words.fixes(d)]
    assert fixes == ["something", "halve", "lower", "the", "reduce", "to"]  # held, batch, ..., snapshot
    d.state_first, d.held, d.suggest_snapshot, d.fragmentation_bytes = True, None, False, None
    assert [f.text.split(" ")[0] for f in words.fixes(d)] == ["the", "halve", "lower"]
    assert words.fixes(d)[0].text.startswith("the model state alone takes 8.00 GiB (30%)")


def test_near_capacity_from_the_allocator_and_from_a_trace() -> None:
    d = GpuMemory(False, "critical", 80 * GIB, 74 * GIB, 78 * GIB, used=0.975)
    assert words.summary(d) == "GPU memory reached 98% of the device"
    assert words.facts(d)[0].text == ("the CUDA allocator reserved up to 78.00 GiB of 80.00 GiB (98%); "
                                      "tensors peaked at 74.00 GiB")
    t = TraceMemory("warning", 0.9, 72 * GIB, 80 * GIB, 20 * GIB)
    assert words.trace_summary(t) == "GPU memory reached 90% of the device"
    assert [f.name for f in words.trace_facts(t)] == ["gpu_memory_fraction", "fragmentation_bytes"]
    assert [f.text.split(":")[0] for f in words.trace_fixes(t)] == ["lower peak memory",
                                                                     "reduce fragmentation"]


def test_growth_toward_the_device_s_capacity() -> None:
    d = GpuGrowth("critical", 50 << 20, 0.99, 80 * GIB, 60 * GIB, 1228.8, None)
    assert words.growth_summary(d) == "GPU memory grows and fills the device in about 20 min"
    assert [(f.name, f.value) for f in words.growth_facts(d)] == [
        ("gpu_growth_bytes_per_s", float(50 << 20)), ("exhaustion_s", 1228.8)]
    first, snapshot = words.growth_fixes(d)
    assert first.text.startswith("find what is kept across steps: outputs or losses")
    assert snapshot == words.snapshot_fix() and snapshot is not words.snapshot_fix()
    d.leak = LeakEvidence(label="float32[8]", grown_count=5, grown_bytes=160, steps=5, seconds=1.0,
                          holder="history (a list)")
    assert words.growth_fixes(d)[0].text.startswith("history keeps a float32[8] tensor every step")
    assert words.growth_facts(d)[-1].name == "leak_bytes"
    # A running sum that keeps every step's graph (on the GPU as on the host): named with its line.
    d.leak = None
    d.graph = GraphGrowth("running (a local Tensor in main, train.py)", "() float32 cuda:0", 900, 4_100,
                          False, True, 320, 30.0, "train.py:48")
    assert words.growth_facts(d)[-1].name == "graph_nodes"
    fix = words.growth_fixes(d)[0]
    assert fix.text.startswith("running adds tensors that carry their autograd graph")
    assert fix.where == "train.py:48"
