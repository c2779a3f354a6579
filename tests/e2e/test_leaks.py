"""Naming a leak in a real run: when memory keeps climbing, two tensor censuses and the container
that grows (the census in-process: tests/unit/probes/test_leak_census.py)."""

from __future__ import annotations

import pytest

MIB = 1 << 20


@pytest.mark.light
def test_a_growing_list_is_named_in_the_run_report(replayed_run):
    """Batches kept in one list, a numpy copy of half of each in another: the tensor census names
    the first; the second, numpy arrays no tensor census counts, is named from the script's own
    containers counted at both censuses, with what an item is and holds."""
    from conftest import SCRIPTS

    proc, rep = replayed_run(SCRIPTS / "host_leak.py", "14", "arrays", opts=("--no-stacks",))
    assert proc.returncode == 0, proc.stderr
    assert rep["primary"] == "oom-risk"
    leak = rep["evidence"]["memory"]["leak"]
    assert leak["label"] == "(512, 256) float32 cpu"
    assert leak["holder"].startswith("seen_batches (") and "module-level list" in leak["holder"]
    assert 0.8 <= leak["grown_count"] / leak["steps"] <= 1.2  # one per step
    f = rep["findings"][0]
    assert f["fixes"][0]["text"].startswith("seen_batches keeps a (512, 256) float32 cpu tensor")
    # glibc malloc's account crosses from the script's process: between the same two censuses,
    # what it handed out grew by the batches kept (the growth is theirs, not freed memory kept).
    kept = rep["evidence"]["memory"]["kept"]
    assert kept["holder"].startswith("seen_arrays (") and "module-level list" in kept["holder"]
    assert kept["item"] == "a (256, 256) float32 numpy array" and abs(kept["item_bytes"] - (256 << 10)) < 4096
    assert 0.8 <= kept["added"] / kept["steps"] <= 1.2  # one a step
    assert any(x["text"].startswith("seen_arrays keeps a (256, 256) float32 numpy array every step")
               for x in f["fixes"]), f["fixes"]
    heap = rep["evidence"]["memory"]["heap"]
    if heap is not None:  # None only where the C library has no mallinfo2
        held = leak["grown_bytes"] + kept["added"] * kept["item_bytes"]
        assert 0.8 <= heap["used_grown_bytes"] / held <= 1.3, (heap, leak, kept)
        assert "most of it memory malloc keeps" not in f["summary"]


@pytest.mark.light
def test_batches_kept_in_a_bounded_deque_level_off_and_are_no_oom_risk(replayed_run):
    """The same batches kept in a deque(maxlen=2000): memory climbs as steadily for the 14 s (a
    straight line once projected "runs out in about 10 min"), but the census finds the deque
    filling, its items' size and pace, and memory levels off below the limit once it is full: a
    note, no oom-risk."""
    from conftest import SCRIPTS

    proc, rep = replayed_run(SCRIPTS / "host_leak.py", "14", "window", opts=("--no-stacks",))
    assert proc.returncode == 0, proc.stderr
    mem = rep["evidence"]["memory"]
    [buf] = mem["buffers"]
    assert buf["holder"].startswith("seen_window (") and "module-level deque" in buf["holder"], buf
    assert buf["maxlen"] == 2000 and 500 <= buf["items"] < 2000, buf
    assert abs(buf["item_bytes"] - 512 * 256 * 4) < 4096, buf  # a batch's storage and its object
    assert mem["leak"]["holder"] == buf["holder"]  # the tensor census names the deque too
    assert mem["growth_bytes_per_s"] > 20 * MIB  # growing all along
    assert not any(f["category"] == "oom-risk" for f in rep["findings"]), rep["findings"]
    [note] = [n for n in rep["notes"] if n.startswith("memory grew")]
    assert "seen_window" in note and "with maxlen=2,000" in note and "no exhaustion projected" in note


def test_a_buffer_that_filled_and_stopped_before_the_run_ended_is_no_oom_risk(replayed_run):
    """A replay buffer in a function's local list, trimmed with pop(0) at 60,000 entries
    (tests/scripts/real_code/trimmed_buffer.py): memory rose ~100 MB over 6 s, then stayed level
    for the last seconds, before any census could name the list. The line fitted over the whole
    span read "runs out in about 40 min", critical; flat over its last third, it projects nothing."""
    from conftest import SCRIPTS

    proc, rep = replayed_run(SCRIPTS / "real_code" / "trimmed_buffer.py", opts=("--no-stacks",))
    assert proc.returncode == 0, proc.stderr
    mem = rep["evidence"]["memory"]
    assert mem["growth_bytes_per_s"] > 2 * MIB and mem["growth_r2"] > 0.8, mem  # (a rise, fitted)
    assert mem["growth_tail_bytes_per_s"] < 0.2 * mem["growth_bytes_per_s"], mem
    assert not any(f["category"] == "oom-risk" for f in rep["findings"]), rep["findings"]


@pytest.mark.light
def test_batches_kept_in_a_list_its_class_bounds_level_off_and_are_no_oom_risk(replayed_run):
    """The same batches in the old DQN tutorial's ReplayMemory (a list filled to self.capacity,
    then overwritten in a ring): read as a leak it was "runs out in about N min" (a 40,000-frame
    memory, 25 s in: critical, 34 min, where it holds ~1.1 GB at most); the census reads the bound
    from the class and the list is a filling buffer, said in a note."""
    from conftest import SCRIPTS

    proc, rep = replayed_run(SCRIPTS / "host_leak.py", "14", "ring", opts=("--no-stacks",))
    assert proc.returncode == 0, proc.stderr
    mem = rep["evidence"]["memory"]
    [buf] = mem["buffers"]
    assert buf["holder"] == "ReplayMemory.memory (a list attribute)", buf
    assert buf["capacity"] == "ReplayMemory.capacity" and buf["maxlen"] == 2000, buf
    assert 500 <= buf["items"] < 2000 and abs(buf["item_bytes"] - 512 * 256 * 4) < 4096, buf
    assert not any(f["category"] == "oom-risk" for f in rep["findings"]), rep["findings"]
    [note] = [n for n in rep["notes"] if n.startswith("memory grew")]
    assert "which its class keeps below ReplayMemory.capacity = 2,000" in note, note
    assert "no exhaustion projected" in note, note


@pytest.mark.light
def test_batches_kept_by_the_graphs_of_kept_losses_name_the_losses_list(replayed_run):
    """The list holds losses with their graphs (backward(retain_graph=True)), and the graphs the
    batches: the batches grow, held by no container; the losses' list is named, with the graph."""
    from conftest import SCRIPTS

    proc, rep = replayed_run(SCRIPTS / "host_leak.py", "14", "losses", opts=("--no-stacks",))
    assert proc.returncode == 0, proc.stderr
    assert rep["primary"] == "oom-risk"
    leak = rep["evidence"]["memory"]["leak"]
    assert leak["label"] == "(512, 256) float32 cpu" and leak["graph"] == "() float32 cpu", leak
    assert leak["holder"].startswith("seen_losses (") and "module-level list" in leak["holder"]
    assert rep["findings"][0]["fixes"][0]["text"].startswith(
        "seen_losses keeps a () float32 cpu tensor with its autograd graph (grad_fn)")


@pytest.mark.light
def test_a_running_loss_that_keeps_every_steps_graph_is_named_with_its_line(replayed_run):
    """`running += loss` (not loss.item()): one tensor holds every step's autograd graph, a GRU's
    on the CPU ~300 KB a step; no list grows and no tensor piles up where Python sees them. The
    census walks the graphs: the total is named, with the line that adds to it."""
    from conftest import SCRIPTS

    proc, rep = replayed_run(SCRIPTS / "running_loss.py", "16", opts=("--no-stacks",))
    assert proc.returncode == 0, proc.stderr
    assert rep["primary"] == "oom-risk"
    g = rep["evidence"]["memory"]["graph"]
    assert g["holder"] == "running (a local Tensor in main, tests/scripts/running_loss.py)", g
    assert g["spans"] and (g["nodes"] > g["nodes_before"] or g["capped"]), g
    source = (SCRIPTS / "running_loss.py").read_text().splitlines()
    line = next(i for i, t in enumerate(source, 1) if t.strip() == "running += loss")
    f = rep["findings"][0]
    assert f["open_question"] is None, f  # explained
    assert f["fixes"][0]["where"] == f"tests/scripts/running_loss.py:{line}"
    assert f["fixes"][0]["text"].startswith("running adds tensors that carry their autograd graph (grad_fn)")


@pytest.mark.light
def test_gpu_memory_that_keeps_climbing_projects_the_oom_and_names_the_list(replayed_run):
    import json

    from conftest import SCRIPTS

    # From 1 GiB: each census needs +64 MiB, well inside the 16 s run (5% of 10 GiB would not be).
    fake = {"total": 80 << 30, "allocated": 1 << 30, "grow_per_s": 100 * MIB}
    proc, rep = replayed_run(SCRIPTS / "fake_gpu_leak.py", "16", opts=("--no-stacks",),
                             env={"FAKE_CUDA": json.dumps(fake)})
    assert proc.returncode == 0, proc.stderr
    mem = rep["evidence"]["cuda_memory"]
    assert abs(mem["growth_bytes_per_s"] - 100 * MIB) < 5 * MIB and mem["growth_r2"] > 0.99
    gpu = next(f for f in rep["findings"] if f["summary"].startswith("GPU memory grows"))
    assert gpu["category"] == "oom-risk" and gpu["severity"] == "critical"  # full in ~12 min
    assert gpu["fixes"][0]["text"].startswith("outputs_log keeps a (256, 64) float32")
    assert rep["evidence"]["memory"]["leak"]["holder"].startswith("outputs_log (")


