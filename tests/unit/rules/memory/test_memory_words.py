"""The host-memory rule's words: each sentence form once, from decisions built by hand (the rule
tests in test_rules.py assert the decisions)."""

from __future__ import annotations

from gpubottle.evidence import LeakEvidence
from gpubottle.report import Fact
from gpubottle.rules.memory import decide as md
from gpubottle.rules.memory import words
from gpubottle.rules.memory.decide import Growth, HostMemory
from gpubottle.rules.memory.workers import HeldCopies

GIB = 1 << 30


def _leak() -> LeakEvidence:
    return LeakEvidence(label="float32[64, 1000]", grown_count=40, grown_bytes=10 << 20, steps=20,
                        seconds=4.0,
                        holder="history (a list in train.py)")


def test_each_cause_has_its_reason_in_order() -> None:
    d = HostMemory("critical", [md.OOM_KILLED, md.NEAR_LIMIT], used=0.93, limit_bytes=16 * GIB)
    assert words.summary(d) == ("the run was killed (SIGKILL) with memory nearly full: the OOM "
                                "killer; host memory reached 93% of its limit")
    d.causes = [md.MEMORY_ERROR]
    assert words.summary(d) == "the run died of memory exhaustion"
    d.growth = Growth(20 << 20, 0.99, 1200.0, 2 * GIB)
    d.causes = [md.GROWS_CRITICAL]
    assert words.summary(d) == "memory grows and runs out in about 20 min"
    d.causes = [md.GROWS_WARNING]
    assert words.summary(d) == "memory grows and would run out in about 20 min"
    d.copies = HeldCopies(4, 700 << 20, GIB, "data.py:10")
    d.causes = [md.WORKER_COPIES]
    assert words.summary(d) == "the forked DataLoader workers hold copies of the dataset (4 x 700 MiB)"


def test_facts_name_the_limit_the_growth_and_the_leak() -> None:
    d = HostMemory("critical", [md.GROWS_CRITICAL], used=0.5, limit_bytes=16 * GIB,
                   limit_source="cgroup", peak_tree_bytes=3 * GIB,
                   growth=Growth(20 << 20, 0.987, 1200.0, 2 * GIB), leak=_leak())
    got = words.facts(d)
    assert [(f.name, f.value) for f in got] == [
        ("host_used_fraction", 0.5), ("growth_bytes_per_s", float(20 << 20)),
        ("exhaustion_s", 1200.0), ("leak_bytes", 10 << 20)]
    assert got[0].text == ("memory in use peaked at 50% of the 16.00 GiB cgroup limit; this run's own "
                           "share (PSS) peaked at 3.00 GiB")
    assert got[1].text.startswith("the run's memory grows steadily by 1.17 GiB/min (R^2 0.99); at this "
                                  "rate memory runs out in about 20 min")
    assert got[3].text.endswith("in 20 steps, about 2.0 per step, held in history (a list in train.py)")


def test_fixes_name_what_is_kept_or_what_to_change() -> None:
    grows = HostMemory("critical", [md.GROWS_CRITICAL], growth=Growth(20 << 20, 0.99, 1200.0, None))
    assert [f.text.split(":")[0] for f in words.fixes(grows)] == ["find what is kept across steps"]
    grows.leak = _leak()
    assert words.fixes(grows)[0].text.startswith("history keeps a float32[64, 1000] tensor every step")
    near = HostMemory("warning", [md.NEAR_LIMIT], used=0.9, limit_bytes=16 * GIB,
                      fewer_workers=(8, 4), per_worker_bytes=GIB, smaller_batch=(64, 32),
                      loader_site="train.py:42")
    got = words.fixes(near)
    assert [f.change for f in got] == [{"num_workers": [8, 4]}, {"batch_size": [64, 32]}]
    assert all(f.where == "train.py:42" for f in got)
    assert got[0].text.startswith("each DataLoader worker holds about 1.00 GiB of its own")
    assert "(try it and compare the speed)" in got[0].text  # fewer workers may slow the run


def test_leak_words_serve_gpu_memory_too() -> None:
    fact, fix = words.leak_words(LeakEvidence(label="float32[8]", grown_count=5, grown_bytes=160, seconds=1.0,
                                              steps=0, holder=None))
    assert isinstance(fact, Fact) and fact.text.endswith("in 0 steps") and fact.name == "leak_bytes"
    assert fix.text.startswith("something keeps a float32[8] tensor every step")


def test_a_leak_kept_by_autograd_graphs_names_what_holds_them() -> None:
    """Activations no container holds, kept by the graphs of losses a list holds (measured on a
    loop appending its loss after backward(retain_graph=True): 14 GiB/min)."""
    fact, fix = words.leak_words(LeakEvidence(
        label="(256, 2048) float32 cpu", grown_count=296, grown_bytes=592 << 20, seconds=5.0, steps=296,
        holder="losses (train.py, a module-level list)", graph="() float32 cpu"))
    assert fact.text.endswith("about 1.0 per step, kept by the autograd graphs of () float32 cpu tensors "
                              "(with grad_fn) held in losses (train.py, a module-level list)")
    assert fix.text == ("losses keeps a () float32 cpu tensor with its autograd graph (grad_fn), and the "
                        "graph keeps that step's (256, 2048) float32 cpu tensors: keep loss.item() (a "
                        "number) or loss.detach() instead")


def test_losses_kept_with_their_graphs_are_said_as_graphs_not_as_their_bytes() -> None:
    """The kept tensors carry the graphs themselves (history.append(loss) after backward): 4 bytes
    a loss, the graph's nodes the memory that grows; the words say the graph, not 'a tensor'."""
    fact, fix = words.leak_words(LeakEvidence(
        label="() float32 cpu", grown_count=1405, grown_bytes=5620, seconds=8.0, steps=1405,
        holder="history (loss_history.py, a module-level list)", graph="() float32 cpu"))
    assert fact.text.startswith("tensors of () float32 cpu with their autograd graphs (grad_fn) grew "
                                "by 1405 in 1405 steps, about 1.0 per step, held in history")
    assert fix.text == ("history keeps a () float32 cpu tensor with its autograd graph (grad_fn) every "
                        "step: keep loss.item() (a number) or loss.detach() instead")
    _, outputs = words.leak_words(LeakEvidence(
        label="(64, 10) float32 cpu", grown_count=20, grown_bytes=51200, seconds=1.0, steps=20,
        holder="outputs (train.py, a module-level list)", graph="(64, 10) float32 cpu"))
    assert outputs.text.endswith("every step: keep its .detach() (the values without the graph) instead")
