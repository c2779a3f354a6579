"""`gpubottle report` on recorded torch.profiler traces: the verdicts on real traces (the
TensorBoard plugin's ResNet-50 pair, CPU-only, cuda-sync, truncated) and a folder of ranks' traces;
the command's own behaviour (bad input, exit codes) is in tests/e2e/test_trace_report.py."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

from conftest import ROOT, gpubottle_here

TRACES = ROOT.parent / "shared" / "traces"


NW0 = TRACES / "kineto-resnet50-num_workers_0"


NW4 = TRACES / "kineto-resnet50-num_workers_4"


CPU_ONLY = TRACES / "hta-cpu_only"


SYNC = TRACES / "hta-cuda_event_sync"


def _report(path: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "r.json"
    proc = gpubottle_here("report", str(path), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(out.read_text())


def test_resnet50_num_workers_0_matches_the_tensorboard_plugin(tmp_path: Path):
    proc, rep = _report(NW0, tmp_path)
    gpu = rep["evidence"]["gpu"]
    # Published by the TensorBoard profiler plugin for this very file.
    assert abs(gpu["step_s"] * 1e6 - 177592) / 177592 < 0.01
    expected = {"kernel": 55.51, "memcpy": 1.08, "memset": 0.05, "runtime": 1.64, "dataloader": 33.37,
                "cpu_op": 7.70, "other": 0.65}
    for role, pct in expected.items():
        assert abs(gpu["breakdown"][role] * 100 - pct) <= 1.0, role
    assert abs(gpu["kernel_share"] * 100 - 55.51) <= 1.0  # the plugin's "GPU utilization"
    assert rep["primary"] == "data-starved"
    f = rep["findings"][0]
    assert f["category"] == "data-starved"
    assert "not measured" in f["open_question"]  # a trace has no CPU evidence: said, not guessed
    assert f["fixes"][0]["change"]["num_workers"][0] == 0
    assert all(len(line) <= 80 for line in proc.stdout.splitlines())


def test_resnet50_num_workers_4_is_not_data_starved(tmp_path: Path):
    proc, rep = _report(NW4, tmp_path)
    assert rep["primary"] != "data-starved"
    assert rep["primary"] == "compute-bound"
    assert rep["evidence"]["gpu"]["breakdown"]["dataloader"] < 0.01
    copies = rep["evidence"]["gpu"]["copies"]
    assert copies[0]["direction"] == "HtoD" and copies[0]["memory"] == "pageable"
    # A V100 running float32 convolutions (volta_scudnn_*, implicit_convolve_sgemm<float...>): the
    # math fix is float16 autocast with a GradScaler (no bfloat16 or TF32 before Ampere).
    gpu = rep["evidence"]["gpu"]
    assert gpu["compute_capability"] == "7.0" and gpu["matmul_precision"].get("fp32", 0) > 0.9
    cb = next(f for f in rep["findings"] if f["category"] == "compute-bound")
    first = cb["fixes"][0]["text"]
    assert "float32 without tensor cores" in first and "GradScaler" in first


def test_cpu_only_trace_is_handled(tmp_path: Path):
    proc, rep = _report(CPU_ONLY, tmp_path)
    gpu = rep["evidence"]["gpu"]
    assert gpu["uses_gpu"] is False and gpu["kernel_share"] is None  # nothing GPU is invented
    assert gpu["breakdown"]["communication"] > 0.5  # gloo all_reduce dominates this rank's step
    assert any(f["category"] == "communication-bound" for f in rep["findings"])
    assert all(len(line) <= 80 for line in proc.stdout.splitlines())


def test_cuda_sync_trace_is_handled(tmp_path: Path):
    proc, rep = _report(SYNC, tmp_path)
    syncs = {s["call"] for s in rep["evidence"]["gpu"]["syncs"]}
    assert {"cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize"} <= syncs
    assert any("(cuda_sync)" in s for s in syncs)
    assert rep["steps"]["count"] == 1


def test_truncated_trace_is_analysed_as_far_as_it_goes(tmp_path: Path):
    raw = gzip.decompress(next(NW0.glob("*.gz")).read_bytes())
    cut = tmp_path / "cut.pt.trace.json"
    cut.write_bytes(raw[: int(len(raw) * 0.6)])
    proc, rep = _report(cut, tmp_path)
    assert rep["source"]["trace"]["truncated"] is True
    assert rep["source"]["trace"]["events"] > 10000
    assert "cut short" in proc.stdout
    cutgz = tmp_path / "cut.json.gz"
    cutgz.write_bytes(next(NW0.glob("*.gz")).read_bytes()[:600_000])
    proc, rep = _report(cutgz, tmp_path)
    assert rep["source"]["trace"]["truncated"] is True


def test_folder_of_ranks_finds_the_straggler(tmp_path: Path):
    data = json.loads(gzip.decompress(next(SYNC.glob("*.gz")).read_bytes()))
    folder = tmp_path / "ranks"
    folder.mkdir()
    for rank, scale in ((0, 1.0), (1, 1.0), (2, 1.6)):
        d = json.loads(json.dumps(data))
        d["distributedInfo"] = {"rank": rank}
        t0 = min(e["ts"] for e in d["traceEvents"] if "ts" in e)
        for e in d["traceEvents"]:
            if "ts" in e:
                e["ts"] = t0 + (e["ts"] - t0) * scale
            if "dur" in e:
                e["dur"] = e["dur"] * scale
        (folder / f"rank{rank}.pt.trace.json").write_text(json.dumps(d))
    proc, rep = _report(folder, tmp_path)
    assert [r["rank"] for r in rep["ranks"]] == [0, 1, 2]  # one row per file, in rank order
    assert rep["evidence"]["shown_rank"] == 2  # the slowest one's evidence is the report's
    f = next(f for f in rep["findings"] if f["category"] == "straggler")
    assert f["summary"].startswith("rank 2 sets the pace of the 3 ranks")
    assert any("1.60x the median of the other ranks" in x["text"] for x in f["evidence"])
    assert "Ranks (3;" in proc.stdout

