"""A real torch 2.x trace as recorded (HolisticTraceAnalysis' tests/data/ns_resolution_trace, rank 0,
at commit f4d0062): float nanosecond timestamps, a third of its events flow arrows (ac2g, fwdbwd),
every op with its argument dictionary. Read by both of the reader's paths, and repeated."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from conftest import ROOT, gpubottle_here

REAL = ROOT / "tests" / "traces" / "hta_ns_resolution.pt.trace.json.gz"


def test_real_trace_reads_as_compute_bound(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = gpubottle_here("report", str(REAL), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(out.read_text())
    gpu = rep["evidence"]["gpu"]
    assert rep["primary"] == "compute-bound"
    assert len(rep["evidence"]["steps"]["durations_s"]) == 5
    assert abs(gpu["breakdown"]["kernel"] - 0.968) < 0.01
    assert gpu["breakdown"]["memcpy"] == 0 and gpu["breakdown"]["memcpy_device"] > 0  # DtoD stays on the GPU
    assert rep["evidence"]["run"]["trace"]["events"] == 68_692
    assert "could not be read" not in proc.stdout  # flows and metadata are not malformed events


def test_repeated_trace_keeps_its_shares(tmp_path: Path) -> None:
    """Three copies one after another, ids and timestamps shifted (the bench's real shape)."""
    data = json.loads(gzip.decompress(REAL.read_bytes()))
    events = data.pop("traceEvents")
    ts = [e["ts"] for e in events if "ts" in e]
    span = max(ts) - min(ts) + 1000
    copies = []
    for k in range(3):
        for e in events:
            e2 = dict(e)
            if "ts" in e2:
                e2["ts"] += k * span
            if isinstance(e2.get("id"), int):
                e2["id"] += k * 10_000_000
            args = e2.get("args")
            if isinstance(args, dict) and isinstance(args.get("correlation"), int):
                e2["args"] = {**args, "correlation": args["correlation"] + k * 10_000_000}
            if str(e2.get("name", "")).startswith("ProfilerStep#"):
                e2["name"] = f"ProfilerStep#{int(e2['name'][13:]) + k * 100}"
            copies.append(e2)
    big = tmp_path / "big.pt.trace.json"
    big.write_text(json.dumps({**data, "traceEvents": copies}))
    one, three = tmp_path / "one.json", tmp_path / "three.json"
    assert gpubottle_here("report", str(REAL), "--json", str(one)).returncode == 0
    proc = gpubottle_here("report", str(big), "--json", str(three))
    assert proc.returncode == 0, proc.stderr
    a, b = json.loads(one.read_text())["evidence"], json.loads(three.read_text())["evidence"]
    assert len(b["steps"]["durations_s"]) == 15
    for role, share in a["gpu"]["breakdown"].items():
        assert abs(b["gpu"]["breakdown"][role] - share) < 0.01, role
