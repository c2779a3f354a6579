"""The leak census in-process: where a kept tensor is held, each storage counted once, and the
watch that asks for a census only while memory keeps climbing."""

from __future__ import annotations

import os
import sys
from collections import deque

import pytest
import torch

from gpubottle.collect.leakwatch import MIN_GAP_S, STARTUP_S, LeakWatch
from gpubottle.probes import sites
from gpubottle.probes.leaks import holder_of, tensor_groups

MIB = 1 << 20


module_history = [torch.zeros(4, 4) for _ in range(6)]


class Trainer:
    def __init__(self) -> None:
        self.losses = [torch.zeros(3) for _ in range(5)]


def test_holder_names_module_lists_locals_and_attributes():
    # (Results are taken before asserting: pytest's assert rewriting keeps its own locals.)
    in_module = holder_of(module_history[3])
    kept = [(torch.zeros(2, 2), torch.ones(1)) for _ in range(4)]  # a tuple inside a local list
    in_local = holder_of(kept[2][0])
    t = Trainer()
    in_attribute = holder_of(t.losses[1])
    temporary = holder_of(torch.zeros(1))
    assert in_module == "module_history (tests/unit/probes/test_leak_census.py, a module-level list)"
    assert in_local == ("kept (a local list in test_holder_names_module_lists_locals_and_attributes, "
                        "tests/unit/probes/test_leak_census.py)"), (sites.is_user_file(__file__),
                                                             sites._LIB_DIRS, os.getcwd())
    assert in_attribute == "Trainer.losses (a list attribute)"
    assert temporary is None  # nothing holds it


def test_groups_count_each_storage_once():
    base = torch.zeros(10, 10)
    groups = tensor_groups([base, base[:5], torch.zeros(10, 10)])
    assert groups["(10, 10) float32 cpu"] == [800, 2]


def test_leak_watch_asks_twice_only_while_memory_keeps_climbing():
    w = LeakWatch(started=0.0)
    assert w.observe(1.0, 500 * MIB) is None  # start-up: no baseline yet
    assert w.observe(STARTUP_S + 1, 500 * MIB) is None
    assert w.observe(STARTUP_S + 2, 600 * MIB) == 1  # +100 MiB over the lowest level
    assert w.observe(STARTUP_S + 3, 700 * MIB) is None  # too soon after the first
    assert w.observe(STARTUP_S + 2 + MIN_GAP_S, 700 * MIB) == 2
    assert w.observe(STARTUP_S + 60, 2000 * MIB) is None  # two at most
    once = LeakWatch(started=0.0)  # a dataset loaded into memory once: one census, never two
    once.observe(STARTUP_S + 1, 500 * MIB)
    assert once.observe(STARTUP_S + 2, 900 * MIB) == 1
    assert all(once.observe(STARTUP_S + 2 + k, 900 * MIB) is None for k in range(1, 30))


def test_censuses_asked_for_by_both_watchers_are_never_back_to_back(tmp_path, monkeypatch):
    """The supervisor (host memory) and the GPU series (CUDA memory) both ask for censuses; two taken
    at once compare nothing. The second waits for the gap, then runs at a later step."""
    from types import SimpleNamespace

    from gpubottle.collect.leakwatch import request_census
    from gpubottle.probes import leaks
    from gpubottle.probes.leaks import LeakProbe
    from gpubottle.wire import LeakCensus

    clock = [1000.0]
    monkeypatch.setattr(leaks, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    records: list[object] = []
    request = str(tmp_path / "census-request")
    probe = LeakProbe(SimpleNamespace(emit=records.append), request)  # type: ignore[arg-type]
    kept = [torch.zeros(64) for _ in range(10)]
    probe.census_now(step=10)  # GPU memory climbing: census 1
    request_census(request, 1)  # the supervisor asks too: already taken
    clock[0] += 1.5
    request_census(request, 2)  # host memory rose again, 1.5 s later: must wait
    probe.on_step(11)
    kept += [torch.zeros(64) for _ in range(50)]
    clock[0] += MIN_GAP_S
    probe.on_step(40)
    censuses = [r for r in records if isinstance(r, LeakCensus)]
    assert [c.step for c in censuses] == [10, 40]
    assert len(kept) == 60




def test_a_dead_weakref_proxy_on_the_heap_breaks_neither_the_census_nor_the_holder():
    """torch.compile keeps weakref proxies; once their object is gone any look at them (isinstance
    through torch.Tensor's metaclass, getattr) raises ReferenceError: the census failed on it."""
    import weakref

    import torch

    from gpubottle.probes.contents import heap_tensors_and_modules
    from gpubottle.probes.leaks import holder_of

    class Gone:
        pass

    obj = Gone()
    proxies = [weakref.proxy(obj)]
    kept = torch.zeros(3)
    referrers = [kept, weakref.proxy(obj)]
    del obj
    tensors, _ = heap_tensors_and_modules()
    assert any(t is kept for t in tensors)
    assert holder_of(kept) is not None and proxies and referrers


def test_the_heap_walk_finds_subclasses_and_skips_what_only_claims_to_be_a_tensor():
    """Judged by type: a Tensor subclass and a Module subclass are found; a lazy module is found
    without its warning; an object whose class only pretends (a mock's __class__) is not counted."""
    import warnings
    from unittest import mock

    from gpubottle.probes.contents import heap_tensors_and_modules

    class Tagged(torch.Tensor):
        pass

    sub = torch.zeros(2).as_subclass(Tagged)
    lazy = torch.nn.LazyLinear(3)
    fake = mock.Mock(spec=torch.Tensor)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tensors, modules = heap_tensors_and_modules()
    assert any(t is sub for t in tensors) and not any(t is fake for t in tensors)
    assert any(m is lazy for m in modules)


def test_the_memory_watch_asks_for_no_census_before_the_scripts_first_step(tmp_path):
    """A GPU VM's start-up (imports, CUDA's start) climbs for 8-12 s, past the watch's 5-s start-up:
    read as a leak, it cost every run a census. The watch waits for the probe's steps marker."""
    from types import SimpleNamespace

    from gpubottle.launch.collectors import Collectors
    from gpubottle.probes.leaks import LeakProbe
    from gpubottle.rundir import RunDir

    rd = RunDir(str(tmp_path))
    col = Collectors(rd, 0.1, stacks=False, gpu=False)
    col._leaks = LeakWatch(started=0.0)
    level = [500 * MIB]
    col.sampler = SimpleNamespace(latest={"mem": SimpleNamespace(procs={1: [0]})}, errors=[])  # type: ignore[assignment]

    def tick(t: float) -> None:
        col.sampler.latest["mem"].procs[1] = [level[0]]  # type: ignore[union-attr]
        col.watch(t)

    for t in range(6, 12):  # start-up still climbing, no step yet
        level[0] += 100 * MIB
        tick(float(t))
    assert not os.path.exists(rd.census_request)
    LeakProbe(SimpleNamespace(emit=lambda r: None), rd.census_request).on_step(1)  # type: ignore[arg-type]
    tick(12.0)  # the baseline: the level at the first step
    assert not os.path.exists(rd.census_request)
    level[0] += 100 * MIB
    tick(13.0)  # climbing while training: census 1
    with open(rd.census_request) as fh:
        assert fh.read() == "1"


def test_activations_kept_by_graphs_of_kept_losses_name_what_holds_the_losses(tmp_path):
    """`kept.append(loss)` after backward(retain_graph=True): each loss keeps its graph, and the
    graph the step's ReLU output, which no container of the script holds (the census said
    "something keeps a (64, 256) tensor"): the losses' holder is named, with the graph."""
    from recorders import ListRecorder

    from gpubottle.probes.leaks import LeakProbe
    from gpubottle.wire import LeakCensus

    rec = ListRecorder()
    probe = LeakProbe(rec, str(tmp_path / "census-request"))  # type: ignore[arg-type]
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    kept = []

    def step() -> None:
        h = net(torch.randn(64, 32))
        loss = (h ** 2).mean()
        loss.backward(retain_graph=True)
        kept.append(loss)

    for _ in range(3):
        step()
    probe._census(3)
    for _ in range(20):
        step()
    probe._census(23)
    first, second = [r for r in rec.records if isinstance(r, LeakCensus)]
    grew = {k: n for k, _, n in second.groups}["(64, 256) float32 cpu"] - {
        k: n for k, _, n in first.groups}["(64, 256) float32 cpu"]
    assert grew == 20
    assert second.graph == "() float32 cpu"
    assert second.holder is not None and second.holder.startswith("kept (a local list in test_activations")
    assert first.graph is None and first.holder is None


def test_losses_kept_after_a_plain_backward_are_said_with_their_graphs(tmp_path):
    """`history.append(loss)` after loss.backward(): the saved activations are freed, so the losses
    are what grows (4 bytes each), and each keeps its step's graph (measured: 65 KB a step of host
    memory for a 3-layer MLP's loss, the census counting 4 bytes): the census says the graph."""
    from recorders import ListRecorder

    from gpubottle.probes.leaks import LeakProbe
    from gpubottle.wire import LeakCensus

    rec = ListRecorder()
    probe = LeakProbe(rec, str(tmp_path / "census-request"))  # type: ignore[arg-type]
    net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    history = []
    numbers = []

    def step(keep: list[object], as_number: bool) -> None:
        loss = net(torch.randn(16, 32)).pow(2).mean()
        loss.backward()
        keep.append(loss.detach() if as_number else loss)

    for _ in range(3):
        step(history, False)
    probe._census(3)
    for _ in range(20):
        step(history, False)
    probe._census(23)
    second = [r for r in rec.records if isinstance(r, LeakCensus)][-1]
    assert second.holder is not None and second.holder.startswith("history (a local list")
    assert second.graph == "() float32 cpu"
    history.clear()
    again = ListRecorder()
    detached = LeakProbe(again, str(tmp_path / "census-request-2"))  # type: ignore[arg-type]
    detached._census(23)
    for _ in range(20):
        step(numbers, True)
    detached._census(43)
    plain = [r for r in again.records if isinstance(r, LeakCensus)][-1]
    assert plain.holder is not None and plain.holder.startswith("numbers (a local list")
    assert plain.graph is None  # detached: no graph kept


_FRAGMENTS = r"""
import json
import numpy as np
from gpubottle.probes.malloc_stats import heap_stats

first = np.ones(4 << 20, np.uint8)  # mapped on its own; freeing it raises malloc's mmap threshold
del first
before = heap_stats()
buffers, kept = [], []
for i in range(100):
    buffers.append(np.ones(2 << 20, np.uint8))  # from the heap now, under the raised threshold
    kept.append(np.ones(28_000, np.uint8))  # kept, just above it
buffers.clear()  # each freed span sits below a kept array: malloc can neither merge nor return it
print(json.dumps([before, heap_stats()]))
"""


_OLD_GLIBC = """
from gpubottle.probes import malloc_stats as ms
ms._looked, ms._call, ms._wraps = True, ms._find("mallinfo", ms._MallInfo), 1
"""


@pytest.mark.parametrize("call", ["mallinfo2", "mallinfo"])
def test_malloc_stats_read_the_freed_spans_glibc_keeps(call: str):
    """Real glibc: 2-MB buffers freed while the 28-KB arrays kept between them stay leave ~200 MB
    free inside the heap, and mallinfo2 says so (the kept arrays are what is in use); so does the
    older mallinfo (glibc before 2.33), its 32-bit fields read modulo 2**32."""
    import json
    import subprocess

    code = (_OLD_GLIBC if call == "mallinfo" else "") + _FRAGMENTS
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    before, after = json.loads(proc.stdout)
    if before is None:
        pytest.skip(f"this C library has no {call}")
    assert before[4] == (1 if call == "mallinfo" else 0)
    free_grown = (after[3] - before[3]) % (1 << 32)
    used_grown = ((after[2] + after[1]) - (before[2] + before[1])) % (1 << 32)
    assert free_grown >= 99 * (2 << 20), (before, after)
    assert 100 * 28_000 <= used_grown <= 100 * 28_000 + (1 << 20), (before, after)


def test_heap_growth_is_read_between_the_first_two_censuses_that_have_it():
    from gpubottle.analysis.memory import heap_growth
    from gpubottle.wire import LeakCensus

    censuses = [LeakCensus(2, 900, 20.0, 0.1, [], None, None, [900 << 20, 8 << 20, 100 << 20, 800 << 20]),
                LeakCensus(1, 400, 15.0, 0.1, [], None, None, [300 << 20, 8 << 20, 90 << 20, 210 << 20])]
    h = heap_growth(censuses, found=["libjemalloc.so.2"])
    assert h is not None and (h.seconds, h.steps) == (5.0, 500)
    assert (h.heap_grown_bytes, h.free_grown_bytes, h.used_grown_bytes) == (600 << 20, 590 << 20, 10 << 20)
    assert h.preloads == ["libjemalloc.so.2"]
    old = LeakCensus(1, 400, 15.0, 0.1, [], None, None)  # a saved run from before malloc was read
    assert heap_growth([old, censuses[0]], found=[]) is None
    # mallinfo's 32-bit fields (glibc before 2.33): the free bytes passed 4 GiB between the two
    wrapped = [LeakCensus(1, 400, 15.0, 0.1, [], None, None, [0, 0, 0, (1 << 32) - (10 << 20), 1]),
               LeakCensus(2, 900, 20.0, 0.1, [], None, None, [0, 0, 0, 190 << 20, 1])]
    h = heap_growth(wrapped, found=[])
    assert h is not None and h.free_grown_bytes == 200 << 20


replay = deque(maxlen=5000)  # a DQN's buffer, filling: (state, action, reward, next state, done)


def test_a_filling_deque_is_found_with_its_holder_bound_and_item_size():
    """Each transition's next state is the next one's state: counted once, an item holds one
    array (the 256-byte data and its object), a tuple, a float and what else it refers to."""
    import sys

    import numpy as np

    from gpubottle.probes.buffers import filling, item_bytes
    from gpubottle.probes.contents import heap_tensors_and_modules
    from gpubottle.probes.leaks import holder_of

    replay.clear()
    s = np.zeros(64, np.float32)
    for i in range(1200):
        s2 = np.full(64, i, np.float32)
        replay.append((s, i % 4, float(i), s2, False))
        s = s2
    full = deque(range(2000), maxlen=2000)  # full: it frees one for each it adds
    window = deque(range(50), maxlen=100)  # a window of recent values
    deques: list = []
    heap_tensors_and_modules(deques)
    got = filling(deques, holder_of)
    one = sys.getsizeof(replay[-1]) + sys.getsizeof(s) + sys.getsizeof(1.0)
    assert one - 64 <= item_bytes(replay) <= one + 64, (item_bytes(replay), one)
    assert [g[:3] for g in got] == [
        ["replay (tests/unit/probes/test_leak_census.py, a module-level deque)", 1200, 5000]], got
    assert full and window  # found in the walk, left out by filling()
    assert any(d is full for d in deques) and any(d is window for d in deques)


def test_tensors_kept_in_a_deque_are_held_by_it():
    kept = deque(torch.zeros(8) for _ in range(4))
    held = holder_of(kept[1])
    assert held is not None and held.startswith("kept (a local deque in "), held


def test_filling_buffers_take_the_latest_census_and_the_pace_between_two():
    from gpubottle.analysis.memory import filling_buffers
    from gpubottle.wire import LeakCensus

    name = "replay (a.py, a module-level deque)"
    first = LeakCensus(1, 100, 10.0, 0.1, [], None, filling=[[name, 1000, 9000, 300]])
    second = LeakCensus(2, 600, 15.0, 0.1, [], None, filling=[[name, 3500, 9000, 300]])
    [b] = filling_buffers([second, first])
    got = (b.items, b.maxlen, b.item_bytes, b.t, b.step, b.items_per_s)
    assert got == (3500, 9000, 300, 15.0, 600, 500.0)
    [b] = filling_buffers([first])
    assert b.items == 1000 and b.items_per_s is None
    assert filling_buffers([LeakCensus(1, 100, 10.0, 0.1, [], None)]) == []


kept_log: list = []


class Run:
    def __init__(self) -> None:
        self.history: dict = {}


def test_the_scripts_containers_are_found_by_the_names_it_gave_them():
    """From the script's side: a module-level list, a local, an attribute of its own object; and
    the one whose items grew most, by what they hold, with what an item is."""
    import numpy as np

    from gpubottle.probes.kept import describe, grew_most, user_containers

    kept_log.clear()
    run = Run()
    preds: list = []
    first = {k: len(v) for k, v in user_containers(sys._getframe()).items()}
    window: deque = deque(maxlen=1000)  # bounded: a buffer, said as one (probes/buffers.py)
    for i in range(100):
        window.append(np.zeros(1024, np.int64))
        preds.append(np.zeros(256, np.int64))  # 2 KB an item
        kept_log.append(float(i))  # 24 bytes an item
        run.history[i] = {"loss": float(i)}
    now = user_containers(sys._getframe())
    here = "tests/unit/probes/test_leak_census.py"
    local = f"preds (a local list in test_the_scripts_containers_are_found_by_the_names_it_gave_them, {here})"
    assert local in now and now[local] is preds
    assert now[f"kept_log ({here}, a module-level list)"] is kept_log
    assert now["Run.history (a dict attribute)"] is run.history
    got = grew_most(first, now)
    assert got is not None and got[0] == local and got[1:3] == [100, 100], got
    assert 2048 <= got[3] <= 2048 + 200 and got[4] == "a (256,) int64 numpy array", got
    other = grew_most(first, now, {local})  # the tensor census named it: the next one
    assert other is not None and other[0] == "Run.history (a dict attribute)", other
    assert describe({"a": 1}) == "a dict of 1 keys" and describe((1, 2)) == "a tuple of 2"
    assert describe(torch.zeros(3, 2)) == "a (3, 2) float32 tensor"
    assert grew_most({k: len(v) for k, v in now.items()}, now) is None  # nothing added since


class Decoded(torch.utils.data.Dataset):
    """Decodes each sample once and keeps it by index."""

    def __init__(self, n: int) -> None:
        self.n, self.cache = n, {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        if i not in self.cache:
            self.cache[i] = torch.zeros(3, 8, 8)
        return self.cache[i]


def test_a_datasets_cache_by_index_is_a_buffer_bounded_by_its_length():
    """Found through the DataLoader that holds it; a cache that grew, keyed by sample index, holds
    len(dataset) at most; the analysis takes its pace between the two censuses."""
    from gpubottle.analysis.memory import filling_buffers
    from gpubottle.probes.kept import bounded_containers, grew_most, user_containers
    from gpubottle.wire import LeakCensus

    loader = torch.utils.data.DataLoader(Decoded(500), batch_size=10, shuffle=True)
    it = iter(loader)
    for _ in range(5):
        next(it)
    bounds: dict[str, tuple[int, str]] = {}
    first = {k: len(v) for k, v in user_containers(sys._getframe(), bounds).items()}
    for _ in range(20):
        next(it)
    now = user_containers(sys._getframe(), bounds)
    name = "Decoded.cache (a dict attribute)"
    assert bounds == {name: (500, "dataset")} and first[name] == 50
    [row] = bounded_containers(first, now, bounds)
    assert row[:3] == [name, 250, 500] and row[4:] == ["dataset", 50], row
    [at_first] = bounded_containers(None, now, bounds)  # the first census: not full, 32 items or more
    assert at_first[:3] == [name, 250, 500] and at_first[4:] == ["dataset"], at_first
    assert grew_most(first, now, {name}) is None  # said as a buffer, not as a store that never lets go
    second = LeakCensus(2, 30, 15.0, 0.1, [], None, filling=[row])
    [b] = filling_buffers([LeakCensus(1, 10, 10.0, 0.1, [], None), second])
    assert b.by_dataset and (b.items, b.maxlen, b.items_per_s) == (250, 500, 40.0)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list = []


class Touchy:
    """An object whose attribute lookup raises what is not an AttributeError (a proxy's)."""

    def __getattribute__(self, name: str):
        raise RuntimeError("not here")


def test_a_models_own_list_is_found_and_an_object_that_raises_is_passed_over():
    from gpubottle.probes.kept import user_containers

    net, touchy = Net(), Touchy()
    found = user_containers(sys._getframe())
    assert found["Net.seen (a list attribute)"] is net.seen and touchy is not None


def test_a_list_its_class_keeps_below_a_capacity_is_a_bounded_buffer():
    """Found among the script's objects' attributes, its bound read from the class; the analysis
    takes its pace between the two censuses and says what bounds it."""
    from tutorial_memory import ReplayMemory

    from gpubottle.analysis.memory import filling_buffers
    from gpubottle.probes.kept import bounded_containers, grew_most, user_containers
    from gpubottle.wire import LeakCensus

    replay = ReplayMemory(1000)
    for _ in range(40):
        replay.push(torch.zeros(64))
    bounds: dict[str, tuple[int, str]] = {}
    first = {k: len(v) for k, v in user_containers(sys._getframe(), bounds).items()}
    name = "ReplayMemory.memory (a list attribute)"
    assert bounds[name] == (1000, "capacity ReplayMemory.capacity") and first[name] == 40
    [at_first] = bounded_containers(None, user_containers(sys._getframe(), bounds), bounds)
    assert at_first[:3] == [name, 40, 1000] and at_first[4:] == ["capacity", None, "ReplayMemory.capacity"]
    for _ in range(160):
        replay.push(torch.zeros(64))
    now = user_containers(sys._getframe(), bounds)
    [row] = bounded_containers(first, now, bounds)
    assert row[:3] == [name, 200, 1000] and row[4:] == ["capacity", 40, "ReplayMemory.capacity"], row
    assert grew_most(first, now, {name}) is None
    [b] = filling_buffers([LeakCensus(1, 10, 10.0, 0.1, [], None, filling=[at_first]),
                           LeakCensus(2, 30, 14.0, 0.1, [], None, filling=[row])])
    assert b.capacity == "ReplayMemory.capacity" and not b.by_dataset
    assert (b.items, b.maxlen, b.items_per_s) == (200, 1000, 40.0)
    for _ in range(900):  # full: a ring that no longer grows is no buffer filling
        replay.push(torch.zeros(64))
    assert bounded_containers(first, user_containers(sys._getframe(), bounds), bounds) == []


def test_the_scripts_own_container_is_named_by_identity_as_the_heap_scan_names_it(monkeypatch):
    """held_in names a tensor's container from the script's side, with the same words holder_of's
    heap scans give, and leaves what no container holds itself (a tuple in a list) to them."""
    from gpubottle.probes import kept as kept_mod
    from gpubottle.probes.kept import held_in, user_containers

    t = Trainer()
    pairs = [(torch.zeros(2, 2), torch.ones(1)) for _ in range(4)]
    by_step = {i: torch.zeros(3) for i in range(5)}
    found = user_containers(sys._getframe())
    fast = [held_in(x, found) for x in (module_history[3], t.losses[1], by_step[2], pairs[1][0])]
    # (not in a comprehension: its own frame's `x` would be the holder the scans find)
    slow = [holder_of(module_history[3]), holder_of(t.losses[1]), holder_of(pairs[1][0])]
    nothing = held_in(torch.zeros(1), found)
    monkeypatch.setattr(kept_mod, "SCAN_MAX", 3)  # longer containers are left to the heap scans
    skipped = held_in(module_history[3], user_containers(sys._getframe()))
    assert fast[:2] == slow[:2] and fast[0] is not None and fast[1] is not None
    here = "tests/unit/probes/test_leak_census.py"
    assert fast[2] == (f"by_step (a local dict in test_the_scripts_own_container_is_named_by_identity_"
                       f"as_the_heap_scan_names_it, {here})")
    assert fast[3] is None and slow[2] is not None  # inside a tuple: the scans find it
    assert nothing is None and skipped is None


def test_a_census_names_a_module_level_list_of_outputs_without_scanning_the_heap(tmp_path, monkeypatch):
    """The common leak (a list that keeps each step's outputs) costs the census no gc.get_referrers
    (a walk over every object each): it is one of the script's own containers."""
    import gc

    from gpubottle.probes.leaks import LeakProbe
    from gpubottle.probes.recorder import Recorder
    from gpubottle.wire import LeakCensus, read_records

    events = tmp_path / "e.jsonl"
    probe = LeakProbe(Recorder(str(events)), str(tmp_path / "census-request"))
    saved = module_history[:]
    try:
        module_history.extend(torch.zeros(64, 64) for _ in range(40))
        probe._census(1)
        module_history.extend(torch.zeros(64, 64) for _ in range(40))
        scans: list[tuple] = []
        real = gc.get_referrers
        monkeypatch.setattr(gc, "get_referrers", lambda *a: scans.append(a) or real(*a))
        probe._census(2)
        monkeypatch.undo()
    finally:
        module_history[:] = saved
    probe.recorder.close()
    censuses = [r for r in read_records(str(events))[0] if isinstance(r, LeakCensus)]
    here = "tests/unit/probes/test_leak_census.py"
    assert censuses[-1].holder == f"module_history ({here}, a module-level list)"
    assert scans == []
