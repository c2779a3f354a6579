"""What `gpubottle run` costs a CPU-saturated training run, measured three ways in this same run.

1. probes: the seconds the in-script probes add to one training step (a tiny loop with and without
   them), as a share of a real step.
2. collectors: the supervisor's samplers and py-spy, switched on and off in alternating windows
   around one long busy run (benchmarks/overhead_windows.py): the time they displace the
   training's threads from the cores (precise), and the throughput difference (noisy).
3. end to end: plain python vs `gpubottle run` on examples/compute_bound.py, interleaved rounds
   with the order rotating, each timing its own steps after warm-up (a short run: all of it inside
   the first 15 s, at the collectors' first rates). This is the number a user sees; on a shared VM
   its interval is wide, so it cross-checks the two above; beside it, what the runs' own accounts
   said gpubottle cost them.

The goals (issues: overhead, the whole run): at most 1% median cost after the first minute, and no
more than plain python's own spread; at most 2% in a run's first 15 s. The verdicts use 1 + 2
(resolved to a fraction of a percent); 3 is printed beside them.

    python benchmarks/bench_overhead.py [--rounds 9] [--groups 12] [--window 6] [--goal 0.01]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from overhead_windows import _interval, collectors_cost, probe_cost_per_step
from paired import own_account

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "compute_bound.py"
BUSY = ROOT / "benchmarks" / "busy_loop.py"


def run_throughput(cmd: list[str]) -> float:
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    m = re.search(r"throughput: ([0-9.]+) steps/s", proc.stdout)
    if proc.returncode != 0 or not m:
        sys.exit(f"benchmark run failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return float(m.group(1))


def end_to_end(rounds: int, steps: int, script: list[str] | None = None) -> dict[str, Any]:
    """Plain python vs `gpubottle run` of `script` (default examples/compute_bound.py --steps
    STEPS), interleaved rounds with the order rotating."""
    script = script or [str(EXAMPLE), "--steps", str(steps)]
    plain, profiled, step_s, own, account = [], [], [], [], []
    parts: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            order = ("python", "gpubottle") if r % 2 == 0 else ("gpubottle", "python")
            for name in order:
                if name == "python":
                    plain.append(run_throughput([sys.executable, *script]))
                else:
                    d = f"{tmp}/r{r}"
                    profiled.append(run_throughput(
                        [sys.executable, "-m", "gpubottle", "run", "--no-status", "--out", d, *script]))
                    with open(os.path.join(d, "evidence.json")) as fh:
                        ev = json.load(fh)
                    own.append(ev["cpu"]["supervisor_cores"] or 0.0)
                    share, own_parts = own_account(ev)  # what the run's account said it cost
                    account.append(share)
                    for k, v in own_parts.items():
                        parts.setdefault(k, []).append(v)
                    step_s.append(statistics.median(ev["steps"]["durations_s"][10:]))
                value = (plain if name == "python" else profiled)[-1]
                print(f"  round {r + 1}/{rounds} {name:10s} {value:8.3f} steps/s", flush=True)
    costs = [1 - g / p for g, p in zip(profiled, plain)]
    lo, hi = _interval(costs)
    base = statistics.median(plain)
    return {"cost": statistics.median(costs), "low": lo, "high": hi, "mean": statistics.fmean(costs),
            "account": statistics.median(account) if account else 0.0,
            # Each part's median over the rounds (a round without the part counts as 0).
            "account_parts": {k: statistics.median(v + [0.0] * (len(account) - len(v)))
                              for k, v in parts.items()},
            "spread": (max(plain) - min(plain)) / base, "stdev": statistics.stdev(plain) / base,
            "own_cores": statistics.median(own), "step_s": statistics.median(step_s)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9, help="end-to-end rounds")
    ap.add_argument("--steps", type=int, default=200, help="steps per end-to-end run")
    ap.add_argument("--groups", type=int, default=8, help="groups of four collector windows, per phase")
    ap.add_argument("--window", type=float, default=6.0, help="seconds per collector window")
    ap.add_argument("--goal", type=float, default=0.01)
    ap.add_argument("--first-goal", type=float, default=0.02, help="goal for a run's first 15 s")
    a = ap.parse_args()
    cores = os.cpu_count() or 1

    print("1. probes in the script: each hooked call, recording vs switched off", flush=True)
    hooks = probe_cost_per_step()
    per_step = sum(v for k, v in hooks.items() if k != "DataLoader()")
    print("   " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in hooks.items())
          + f"; {per_step * 1e6:.1f} us per step (one batch, backward and step)", flush=True)

    print(f"2. collectors: {a.groups} groups of ON OFF OFF ON windows of {a.window:.0f} s around "
          f"benchmarks/busy_loop.py ({cores} torch threads, every core busy)", flush=True)
    phases = {}
    for early, label in ((True, "first 15 s (full rates)"), (False, "after a minute (steady rates)")):
        col = phases[early] = collectors_cost(BUSY, [], a.groups, a.window, first_seconds=early)
        print(f"   {label}: displaced {col['displaced']:.2%} of a second per second "
              f"(95% interval {col['displaced_low']:.2%} .. {col['displaced_high']:.2%}); throughput "
              f"{col['throughput_cost']:+.2%} ({col['throughput_low']:+.2%} .. "
              f"{col['throughput_high']:+.2%}; windows off vary by {col['off_spread']:.0%}); py-spy's "
              f"start and conversion per chunk {col['chunk_cost']:.2%}", flush=True)
    col = phases[False]

    print(f"3. end to end: plain python vs gpubottle run, {a.rounds} interleaved rounds of "
          f"examples/compute_bound.py --steps {a.steps}", flush=True)
    e2e = end_to_end(a.rounds, a.steps)
    probes = per_step / e2e["step_s"]
    print(f"   median cost {e2e['cost']:+.2%} (95% interval {e2e['low']:+.2%} .. {e2e['high']:+.2%}), "
          f"mean {e2e['mean']:+.2%}; plain python's spread {e2e['spread']:.1%} (stdev "
          f"{e2e['stdev']:.1%}); gpubottle's own CPU {e2e['own_cores'] / cores:.2%} of the {cores} "
          f"cores; the runs' own accounts put gpubottle at {e2e['account']:.2%} of their wall time",
          flush=True)

    resolved = col["displaced"] + col["chunk_cost"] + probes
    bound = col["displaced_high"] + col["chunk_cost"] + probes
    first = phases[True]["displaced"] + phases[True]["chunk_cost"] + probes
    first_bound = phases[True]["displaced_high"] + phases[True]["chunk_cost"] + probes
    met = bound <= a.goal and resolved <= e2e["spread"]
    print(f"\nresolved cost: collectors {col['displaced']:.2%} + py-spy chunks {col['chunk_cost']:.2%} "
          f"+ probes {probes:.3%} "
          f"({per_step * 1e6:.0f} us of a {e2e['step_s'] * 1e3:.1f} ms step) = {resolved:.2%} "
          f"(95% upper bound {bound:.2%}); in a run's first 15 s {first:.2%}")
    print(f"goal: at most {a.goal:.0%} and no more than plain python's spread ({e2e['spread']:.1%}): "
          f"{'MET' if met else 'NOT MET'}")
    print(f"a run's first 15 s: {first:.2%} (95% upper bound {first_bound:.2%}); goal at most "
          f"{a.first_goal:.0%}: {'MET' if first_bound <= a.first_goal else 'NOT MET'}")
    # Issue 32: the account's own line agrees with the measurement within 1 point. Its samplers
    # part against the collectors resolved above (these runs are all inside their first 15 s), its
    # hooks against the probes measured apart.
    parts = e2e["account_parts"]
    sampled = sum(v for k, v in parts.items() if k.startswith("samplers"))
    hooked = sum(v for k, v in parts.items() if k.startswith("hooks"))
    low = phases[True]["displaced_low"] + phases[True]["chunk_cost"]
    high = phases[True]["displaced_high"] + phases[True]["chunk_cost"]
    agree = low - 0.01 <= sampled <= high + 0.01 and abs(hooked - probes) <= 0.01
    print(f"the runs' accounts: samplers {sampled:.2%} against collectors resolved {low:.2%} .. "
          f"{high:.2%} (first 15 s), hooks {hooked:.3%} against probes {probes:.3%}: "
          f"{'agree' if agree else 'do NOT agree'} within 1 point")


if __name__ == "__main__":
    main()
