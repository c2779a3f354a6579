"""Run every GPU example through `gpubottle run` and check the verdict its docstring promises.

    python examples/gpu/check.py [--out DIR]      (make gpu-check)

Needs an NVIDIA GPU with a CUDA build of torch; exits 2 (and says so) without one. Prints a table of
expected vs got, and each report's summary, then exits 1 if any verdict differs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = {
    "transfer_bound.py": "transfer-bound",
    "compute_bound.py": "compute-bound",
    "oom_risk.py": "oom-risk",
    "data_starved.py": "data-starved",
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="gpubottle-gpu-check")
    a = ap.parse_args()
    try:
        import torch

        if not torch.cuda.is_available():
            print("gpu-check: no CUDA GPU here (torch.cuda.is_available() is False): nothing checked")
            return 2
        print(f"gpu-check on {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    except ImportError:
        print("gpu-check: torch is not installed")
        return 2
    rows = []
    for script, want in EXPECTED.items():
        out = Path(a.out) / script.removesuffix(".py")
        report = out / "report.json"
        proc = subprocess.run(
            [sys.executable, "-m", "gpubottle", "run", "--no-status", "--out", str(out),
             "--json", str(report), str(HERE / script)],
            capture_output=True, text=True, timeout=900,
        )
        got, summary = "no report", proc.stderr[-400:]
        if report.exists():
            data = json.loads(report.read_text())
            got = data["primary"]
            lead = next((f for f in data["findings"] if f["category"] == got), None)
            summary = lead["summary"] if lead else "; ".join(data.get("notes", []))
            gpu = data["evidence"].get("gpu") or {}
            nvml = data["evidence"].get("nvml") or []
            summary += (f" | window: {gpu.get('source')}, breakdown {gpu.get('breakdown')}"
                        f" | nvml util {[d.get('util_mean') for d in nvml]}")
        rows.append((script, want, got, proc.returncode, summary))
        print(f"{script:20s} expected {want:20s} got {got:20s} exit {proc.returncode}", flush=True)
        print(f"    {summary}", flush=True)
    bad = [r for r in rows if r[1] != r[2]]
    print(f"\n{len(rows) - len(bad)}/{len(rows)} verdicts as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
