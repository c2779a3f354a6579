"""Run every GPU example through `gpubottle run` and check the verdict its docstring promises.

    python examples/gpu/check.py [--out DIR] [--timeout S]      (make gpu-check)
    python examples/gpu/check.py --print-deps                    (gpubottle's dependencies)

Needs an NVIDIA GPU with a CUDA build of torch; exits 2 (and says so) without one. Each example runs
with its profiler-window trace kept; a table of expected vs got is printed as each one ends (with
the kernel families seen and the NVML metrics that answered) and written to DIR/results.json, so
an example that hangs past --timeout costs only its own row. Exits 1 if any verdict differs.
Standard library only: it runs before gpubottle's dependencies are installed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXPECTED = {
    "transfer_bound.py": "transfer-bound",
    "compute_bound.py": "compute-bound",
    "oom_risk.py": "oom-risk",
    "data_starved.py": "data-starved",
}
GRACE_S = 60.0  # after the timeout's SIGINT, for gpubottle to write its report
NVML_METRICS = ("util", "mem_used", "pcie_tx", "sm_clock", "power", "temp", "throttle")


def dependencies() -> list[str]:
    """pyproject.toml's [project] dependencies (a plain read: tomllib is Python 3.11+)."""
    text = (ROOT / "pyproject.toml").read_text()
    block = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    return [line.split('"')[1] for line in block.splitlines() if line.strip().startswith('"')]


def _row(script: str, want: str, out: Path, proc: subprocess.CompletedProcess[str] | None,
         timeout: float) -> dict[str, Any]:
    row: dict[str, Any] = {"script": script, "expected": want, "got": "no report",
                           "exit": None if proc is None else proc.returncode}
    report = out / "report.json"
    if proc is None:
        row["got"] = f"timed out after {timeout:.0f} s"
    if not report.exists():
        row["summary"] = "" if proc is None else proc.stderr[-400:]
        return row
    data = json.loads(report.read_text())
    row["got"] = data["primary"]
    lead = next((f for f in data["findings"] if f["category"] == row["got"]), None)
    row["summary"] = lead["summary"] if lead else "; ".join(data.get("notes", []))
    gpu = data["evidence"].get("gpu") or {}
    row["window"] = {"source": gpu.get("source"), "breakdown": gpu.get("breakdown"),
                     "top_kernels": (gpu.get("top_kernels") or [])[:5]}
    row["nvml"] = [{"device": d.get("name"), "role": d.get("role"), "util": d.get("util_mean"),
                    "answered": [m for m in NVML_METRICS if m not in (d.get("missing") or [])]}
                   for d in data["evidence"].get("nvml") or []]
    row["missing_evidence"] = {k: v.get("reason") for k, v in
                               (data["source"].get("collectors") or {}).items() if not v.get("ok")}
    return row


def _run(cmd: list[str], env: dict[str, str], timeout: float
         ) -> subprocess.CompletedProcess[str] | None:
    """None when it outlived the timeout: then gpubottle is interrupted (it passes the signal to the
    script and still writes its report), and after GRACE_S its whole process group is killed."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=timeout)
        return subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        try:
            p.communicate(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
        return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gpubottle-gpu-check")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per example")
    ap.add_argument("--print-deps", action="store_true")
    a = ap.parse_args()
    if a.print_deps:
        print(" ".join(dependencies()))
        return 0
    try:
        import torch

        if not torch.cuda.is_available():
            print("gpu-check: no CUDA GPU here (torch.cuda.is_available() is False): nothing checked")
            return 2
        print(f"gpu-check on {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    except ImportError:
        print("gpu-check: torch is not installed")
        return 2
    rows = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    for script, want in EXPECTED.items():
        out = Path(a.out) / script.removesuffix(".py")
        cmd = [sys.executable, "-m", "gpubottle", "run", "--no-status", "--out", str(out),
               "--json", str(out / "report.json"), "--profile-window", "on", str(HERE / script)]
        proc = _run(cmd, env, a.timeout)
        row = _row(script, want, out, proc, a.timeout)
        rows.append(row)
        print(f"{script:20s} expected {want:15s} got {row['got']:15s} exit {row['exit']}", flush=True)
        print(f"    {row.get('summary', '')}", flush=True)
        for key in ("window", "nvml", "missing_evidence"):
            if row.get(key):
                print(f"    {key}: {json.dumps(row[key])[:600]}", flush=True)
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "results.json").write_text(json.dumps(rows, indent=1))
    bad = [r for r in rows if r["expected"] != r["got"]]
    print(f"\n{len(rows) - len(bad)}/{len(rows)} verdicts as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
