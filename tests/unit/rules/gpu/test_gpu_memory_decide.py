"""What fills GPU memory: the census (real torch, CPU tensors) and the oom-risk rule's computed fixes;
the whole path through `gpubottle run` is in tests/e2e/test_gpu_memory.py."""

from __future__ import annotations

import torch
from factories import evidence
from torch import nn

from gpubottle.evidence import CudaMemoryEvidence, MemoryContents
from gpubottle.probes.contents import memory_contents as census
from gpubottle.rules import diagnose
from gpubottle.rules.gpu.memory_decide import Held, decide_cuda_oom, requested_bytes

GIB = 1 << 30


def test_census_counts_weights_grads_and_optimizer_state_once():
    model = nn.Sequential(nn.Linear(100, 50), nn.Linear(50, 10))
    n_bytes = sum(p.numel() for p in model.parameters()) * 4
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(8, 100)).sum().backward()
    opt.step()
    kept = torch.zeros(300, 300)  # referenced from Python, found only by the scan
    view = kept[:10]  # a view of the same storage: not counted twice
    got = census([opt, opt], "cpu")
    assert got["weights"] == n_bytes and got["gradients"] == n_bytes
    # Adam keeps two moments per parameter (and a step counter, tiny).
    assert 2 * n_bytes <= got["optimizer_state"] <= 2 * n_bytes + 64
    assert got["optimizers"] == ["Adam"] and got["other_python"] == 0 and not got["scanned"]
    scanned = census([opt], "cpu", scan_objects=True)
    assert scanned["top_tensors"][0] == ["(300, 300) float32", 300 * 300 * 4, 1]
    history = [torch.zeros(100, 100) for _ in range(40)]  # a list that grows every step
    grouped = census([opt], "cpu", scan_objects=True)["top_tensors"]
    assert ["(100, 100) float32", 40 * 100 * 100 * 4, 40] in grouped and len(history) == 40
    # Parameters are not counted again as "other", nor twice (the scan also finds any other live
    # module's parameters in this process: another test's, not yet collected, once took 40 bytes).
    assert n_bytes <= scanned["weights"] < n_bytes + 4096
    assert view.shape[0] == 10
    # Tensors on another device are not counted.
    assert census([opt], "cuda")["weights"] == 0 or torch.cuda.is_available()


def test_census_without_an_optimizer_finds_a_models_weights_by_scanning():
    model = nn.Linear(64, 64)
    got = census([], "cpu", scan_objects=True)
    assert got["weights"] >= (64 * 64 + 64) * 4
    assert model.weight.shape == (64, 64)


def test_requested_bytes_from_torch_message():
    assert requested_bytes("CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 ...") == int(2.5 * GIB)
    assert requested_bytes("Tried to allocate 20.00 MiB") == 20 << 20
    # c10's format_size writes up to 1024 bytes as "N bytes".
    assert requested_bytes("CUDA out of memory. Tried to allocate 512 bytes. GPU 0 has") == 512
    assert requested_bytes("something else") is None


def _oom(contents: MemoryContents | None, allocated: int = 70 * GIB) -> CudaMemoryEvidence:
    return CudaMemoryEvidence(
        device=0, total_bytes=80 * GIB, oom="CUDA out of memory. Tried to allocate 8.00 GiB.",
        oom_allocated_bytes=allocated, oom_reserved_bytes=74 * GIB, oom_free_bytes=1 * GIB,
        contents=contents)


def test_activations_dominate_the_batch_that_fits_is_computed():
    ev = evidence()  # batch_size=32 at train.py:42
    c = MemoryContents(moment="oom", weights_bytes=2 * GIB, gradients_bytes=2 * GIB,
                       optimizer_state_bytes=4 * GIB, other_python_bytes=1 * GIB,
                       optimizers=["AdamW"])
    ev.cuda_memory = _oom(c)
    report = diagnose(ev)
    assert report.primary == "oom-risk"
    d = decide_cuda_oom(ev)
    assert d is not None and d.died and not d.state_first and d.batch is not None
    # Activations: 70 + 8 (the request) - 8 (state) = 70 GiB at batch 32; 0.9 * 75 - 8 = 59.5 GiB
    # left -> 32 * 0.85 = 27 -> 16 (powers of two).
    assert (d.batch.old, d.batch.new, d.batch.steps) == (32, 16, 2)
    assert d.batch.activations_bytes == 70 * GIB and d.batch.budget_bytes == int(0.9 * 75 * GIB - 8 * GIB)
    first = report.findings[0].fixes[0]
    assert first.change == {"batch_size": [32, 16]} and first.where == "train.py:42"


def test_model_state_dominates_sharding_comes_first():
    ev = evidence()
    c = MemoryContents(moment="oom", weights_bytes=15 * GIB, gradients_bytes=15 * GIB,
                       optimizer_state_bytes=30 * GIB, optimizers=["Adam"])
    ev.cuda_memory = _oom(c)
    d = decide_cuda_oom(ev)
    assert d is not None and d.state_first and abs(d.state_share - 60 / 70) < 1e-9
    # The batch still shrinks (18 GiB of activations, 7.5 GiB left beside the state -> 8), after it.
    f = diagnose(ev).findings[0]
    assert f.fixes[0].change == {} and f.fixes[1].change == {"batch_size": [32, 8]}


def test_a_growing_list_of_tensors_is_named_first():
    ev = evidence()
    c = MemoryContents(moment="oom", weights_bytes=GIB // 4, gradients_bytes=GIB // 4,
                       other_python_bytes=60 * GIB, top_tensors=[["(268435456,) float32", 60 * GIB, 60]])
    ev.cuda_memory = _oom(c)
    d = decide_cuda_oom(ev)
    assert d is not None and d.held == Held("(268435456,) float32", 60 * GIB, 60)
    f = diagnose(ev).findings[0]
    assert ("held_from_python", 60 * GIB) in [(e.name, e.value) for e in f.evidence]
    assert f.fixes[0].change == {} and f.fixes[1].change == {"batch_size": [32, 16]}


def test_without_contents_the_batch_is_halved_and_fragmentation_named():
    ev = evidence()
    ev.cuda_memory = _oom(None, allocated=40 * GIB)  # 34 GiB reserved but unused
    d = decide_cuda_oom(ev)
    assert d is not None and d.fragmentation_bytes == 34 * GIB
    assert d.batch is not None and d.batch.activations_bytes is None  # halved: no split to fit
    f = diagnose(ev).findings[0]
    assert f.fixes[0].change == {"batch_size": [32, 16]}
    assert ("fragmentation_bytes", 34 * GIB) in [(e.name, e.value) for e in f.evidence]


def test_near_capacity_without_an_oom_reports_the_split():
    ev = evidence()
    ev.cuda_memory = CudaMemoryEvidence(
        device=0, total_bytes=80 * GIB, peak_allocated_bytes=74 * GIB, peak_reserved_bytes=78 * GIB,
        contents=MemoryContents(moment="step", step=3, weights_bytes=GIB, gradients_bytes=GIB,
                                optimizer_state_bytes=2 * GIB))
    d = decide_cuda_oom(ev)
    assert d is not None and not d.died and d.severity == "critical" and d.used == 78 / 80
    assert not d.suggest_snapshot and d.held is None
    f = next(x for x in diagnose(ev).findings if x.category == "oom-risk")
    assert ("activation_share", round(70 / 74, 4)) in [(e.name, e.value) for e in f.evidence]
    ev.cuda_memory.peak_reserved_bytes = 40 * GIB
    assert "oom-risk" not in {x.category for x in diagnose(ev).findings}


def test_gpu_growth_needs_a_steady_real_climb():
    def growth(rate: float, r2: float = 0.99, samples: int = 30, span: float = 60.0) -> list[str]:
        ev = evidence()
        ev.cuda_memory = CudaMemoryEvidence(
            total_bytes=80 * GIB, peak_allocated_bytes=20 * GIB, peak_reserved_bytes=22 * GIB,
            growth_bytes_per_s=rate, growth_r2=r2, growth_samples=samples, growth_span_s=span,
            last_allocated_bytes=20 * GIB)
        return [f.summary for f in diagnose(ev).findings if f.category == "oom-risk"]

    assert growth(50 << 20) == ["GPU memory grows and fills the device in about 20 min"]
    ev = evidence()
    ev.cuda_memory = CudaMemoryEvidence(
        total_bytes=80 * GIB, peak_allocated_bytes=20 * GIB, peak_reserved_bytes=22 * GIB,
        growth_bytes_per_s=50 << 20, growth_r2=0.99, growth_samples=30, growth_span_s=60.0,
        last_allocated_bytes=20 * GIB)
    oom = next(f for f in diagnose(ev).findings if f.category == "oom-risk")
    assert oom.exhaustion_s is not None and abs(oom.exhaustion_s - 60 * GIB / (50 << 20)) < 1
    assert growth(50 << 20, r2=0.3) == []  # allocations that come and go: no trend
    assert growth(2 << 20, span=60.0) == []  # 120 MiB in all: under the floor
    assert growth(50 << 20, samples=4) == []
    assert growth(100.0) == []


def test_of_two_memories_running_out_the_sooner_leads():
    from gpubottle.report import Fact, Finding
    from gpubottle.rules.engine import _order_key

    # The order reads the structured field, not a fact's name.
    host = Finding("oom-risk", "critical", None, "host", [Fact("", "other", 1.0)], [], exhaustion_s=2400.0)
    gpu = Finding("oom-risk", "critical", None, "gpu", [], [], exhaustion_s=700.0)
    died = Finding("oom-risk", "critical", None, "died", [], [])
    starved = Finding("data-starved", "critical", 0.8, "input", [], [])
    order = sorted([starved, host, gpu, died], key=_order_key)
    assert [f.summary for f in order] == ["died", "gpu", "host", "input"]

