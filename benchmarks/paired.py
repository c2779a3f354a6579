"""gpubottle's cost end to end, with the machine's drift taken out: plain python and `gpubottle run`
of the same script at the same time, each held to its own half of the cores.

Run one after the other, two runs of the same script differ here by 12-37% (a shared VM's speed
moves by that much within minutes, in bursts of seconds), which hides a 1% cost behind hundreds of
rounds. Run together, the two see the same bursts. Each gets half the cores (sched_setaffinity,
inherited by everything it starts: under `gpubottle run` the supervisor, its samplers and py-spy
share the training's half, so every CPU-second they take is one the training could have had, the
case of a machine with no core to spare) and as many torch threads as its half has. The halves
swap every round, so a faster core favours neither: two rounds, one each way, are one measurement
(an odd last round is left out); which of the two starts first swaps every other pair.

And inside a round the two process trees trade halves every SWAP_S seconds (every thread of each
tree re-pinned): a core's speed here moves on its own by several percent for seconds at a time (the
host's other tenants), so a run held to one core for 45 s carried that core's bursts. Plain beside
plain, 40-s rounds of busy_loop.py (2026-12-01, 4 rounds each, the same hour): held, the two runs'
rates differed by 4.4% (sd) between 5-s windows and by 7.1% between rounds; trading every 1 s,
2.1% and 1.6%; every 0.25 s, 1.2% and 2.2%. What was left was the processes' own (one round's two
runs ~4% apart throughout): glibc's malloc thresholds, a lottery per process (bench_heavy.py's
FIXED_MALLOC); with them fixed too, the rounds moved -0.7% .. +0.9%. The tree moved first at a
trade had been the one started first, always, and gained a few ms each time (a running thread
moves when its core's stopper runs, ~3 ms a tree here): plain beside plain (2026-12-04, 8 rounds)
-1.77% a round where the second side started first, -0.15% the other way; with the first move
alternating, 6 of 8 rounds within 0.25%, two at -1.3% and -2.6%.

Each script marks its steps' ends on the monotonic clock (benchmarks/step_times.py). Per round:
- after 15 s: steps per second in the span both runs were training from 15 s after their launch
  to the first one's last step: the cost a long run sees, the collectors at their later rates;
- whole run: steps per second from launch to the last step, start-up included (the collectors'
  full rates, gpubottle's start and the leak censuses); the report written after the script is
  said apart (the wall time to the prompt).
Beside it, what the run's own account said gpubottle cost it (its share of the run's wall time).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from in_place import Part, split_round, summary
from overhead_windows import _interval

from gpubottle.collect.procfs import children, thread_ids

AFTER_S = 15.0
SWAP_S = 0.25  # the two trees trade halves this often inside a round (0: held all round)
APART_WINDOW_S = 5.0
APART_BEYOND = 0.02  # a round whose runs stay this far apart in every window after 15 s


def _tree(pid: int) -> list[int]:
    """pid and every process it started (procfs.children, level by level; one that ended meanwhile
    has none)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children(p) or ()
    return out


def _threads(pid: int) -> list[int]:
    """Every thread of pid's process tree (one that ended meanwhile has none)."""
    return [tid for p in _tree(pid) for tid in thread_ids(p) or ()]


def _trade(trees: list[tuple[list[int], list[int]]]) -> None:
    """Each (threads, cores) pair's threads onto its cores, in the order given (threads and
    processes started later inherit their starter's; one that ended meanwhile is skipped).
    Moving a running thread waits for its core's stopper (~3 ms a tree here): until the second
    tree has moved, the first shares its new core with it while the other core idles."""
    for tids, cores in trees:
        for tid in tids:
            try:
                os.sched_setaffinity(tid, cores)
            except OSError:
                pass


def _moves(live: list[tuple[str, int]], held: dict[str, list[int]],
           trade: int) -> list[tuple[list[int], list[int]]]:
    """Each live tree's threads with its new half, for trade number `trade`. The tree moved first
    gains the few ms the other waits to move: moved first always (the one started first), it ran
    ~1.5% faster all round (plain beside plain, steady, 2026-12-04: -1.77% a round started one way,
    -0.15% the other), so which goes first alternates from one trade to the next."""
    order = live if trade % 2 == 0 else live[::-1]
    return [(_threads(pid), held[name]) for name, pid in order]


def halves() -> tuple[list[int], list[int]] | None:
    cores = sorted(os.sched_getaffinity(0))
    half = len(cores) // 2
    if half == 0:
        return None
    return cores[:half], cores[half:2 * half]


def _rate(times: list[float], t0: float, t1: float) -> float:
    """Steps a second from the first step's end after t0 to the last one's at or before t1: whole
    steps over their own span. (Counted over [t0, t1], a run's rate was off by up to a step at each
    end: +-1.5% a round where the memory case ran ~65 steps of ~0.45 s after 15 s on one core.)"""
    inside = [t for t in times if t0 < t <= t1]
    if len(inside) < 2 or inside[-1] <= inside[0]:
        return 0.0
    return (len(inside) - 1) / (inside[-1] - inside[0])


def apart(a: list[float], b: list[float], t0: float, t1: float) -> float | None:
    """How far two runs' paces stayed apart all through [t0, t1]: the median of a's rate over b's
    less one in each APART_WINDOW_S window (b slower: positive), where every window has one sign
    and the median is past APART_BEYOND; else None. Such rounds come on either side, plain beside
    plain too (2026-12-04, steady: 5 of 32 gpubottle-beside-plain rounds at 2-5% each way, 1 of
    16 plain-beside-plain at 3.4%): a pace set at launch, which a round's one number cannot tell
    from a cost."""
    offs = []
    w = t0
    while w + APART_WINDOW_S <= t1:
        r_a, r_b = _rate(a, w, w + APART_WINDOW_S), _rate(b, w, w + APART_WINDOW_S)
        if not r_a or not r_b:
            return None
        offs.append(r_a / r_b - 1)
        w += APART_WINDOW_S
    if len(offs) < 2 or not (all(o > 0 for o in offs) or all(o < 0 for o in offs)):
        return None
    med = statistics.median(offs)
    return med if abs(med) > APART_BEYOND else None


def own_account(ev: dict[str, Any]) -> tuple[float, dict[str, float]]:
    """What a run's account said gpubottle cost it: its line's share of the run, and each part
    (samplers, hooks, heavier probes, its start: the name before its parenthesis) as a share."""
    own = [e for e in ev.get("account", []) if e["phase"] == "gpubottle"]
    wall = sum(e["seconds"] for e in ev.get("account", [])) or 1.0
    parts: dict[str, float] = {}
    for e in own:
        for k, v in (e.get("parts") or {}).items():
            parts[k.split(" (")[0]] = parts.get(k.split(" (")[0], 0.0) + v / wall
    return sum(e["share"] for e in own), parts


def paired(script: Path, args: list[str], rounds: int, gpubottle_args: tuple[str, ...] = (),
           log: Any = print, keep: Path | None = None, aa: bool = False,
           env: dict[str, str] | None = None, swap_s: float = SWAP_S,
           baseline: tuple[str, ...] | None = None,
           side_env: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """`rounds` rounds of plain python and `gpubottle run` side by side; per-round costs (1 - the
    profiled run's rate / plain's) after AFTER_S and over the whole run, with medians, means and
    95% intervals, and the accounts' own line. `keep`: a folder for each round's run directory and
    both runs' step times (roundN/), to tell a slow round from the others. `aa`: plain python on
    both sides (what the method gives where there is nothing to find: its own spread). `env`: more
    environment for both sides (bench_heavy.FIXED_MALLOC). `swap_s`: how often the two trade
    halves inside a round (0: never). `baseline`: the other side is `gpubottle run` with these
    options instead of plain python (the cost of a part, directly: both sides carry gpubottle's
    start and the rest alike); `side_env`: more environment for one side ("plain": the baseline,
    "gpubottle"), e.g. a temporary switch that turns a part off."""
    env_both = env or {}
    side_env = side_env or {}
    split = halves()
    if split is None:
        raise RuntimeError("the paired measurement needs at least 2 cores")
    after, whole, to_prompt, accounts, swaps_cpu = [], [], [], [], 0.0
    apart_rounds = 0
    parts: dict[str, list[float]] = {}
    places: list[dict[str, Part]] = []  # each round split by what gpubottle was doing (in_place.py)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            cores = split if r % 2 == 0 else (split[1], split[0])
            # Which starts first swaps every other pair: the one started second ran 5% faster in 3
            # of 4 plain-beside-plain rounds here (2026-11-28), on either core.
            order = [("plain", cores[0]), ("gpubottle", cores[1])]
            first = order if (r // 2) % 2 == 0 else order[::-1]
            procs, launched, held = {}, time.monotonic(), dict(order)
            for name, mine in first:
                env = {**os.environ, **env_both, **side_env.get(name, {}),
                       "BENCH_STEP_TIMES": f"{tmp}/{name}.json", "OMP_NUM_THREADS": str(len(mine))}
                plain = aa or (name == "plain" and baseline is None)
                options = gpubottle_args if name == "gpubottle" else baseline or ()
                cmd = [sys.executable, str(script), *args] if plain else [
                    sys.executable, "-m", "gpubottle", "run", "--no-status", "--out", f"{tmp}/{name}{r}",
                    *options, str(script), *args]
                with open(f"{tmp}/{name}.err", "wb") as err:
                    procs[name] = subprocess.Popen(
                        cmd, env=env, stdout=subprocess.DEVNULL, stderr=err,
                        # this process has no threads: a preexec_fn is safe here
                        preexec_fn=functools.partial(os.sched_setaffinity, 0, mine))
            ended: dict[str, float] = {}
            swap_at, c0, trades = launched + swap_s, time.process_time(), 0
            while len(ended) < len(procs):
                time.sleep(0.05)  # (the trade and these polls: ~1% of a core at 0.01 s)
                now = time.monotonic()
                for name, p in procs.items():
                    if name not in ended and p.poll() is not None:
                        ended[name] = now
                if now - launched > 600:
                    for p in procs.values():
                        p.kill()
                    raise RuntimeError("a benchmark round ran past 600 s")
                if swap_s and now >= swap_at:
                    held = {"plain": held["gpubottle"], "gpubottle": held["plain"]}
                    live = [(name, p.pid) for name, p in procs.items() if name not in ended]
                    _trade(_moves(live, held, trades))
                    trades += 1
                    swap_at += swap_s
            swaps_cpu += time.process_time() - c0
            for name, p in procs.items():
                if p.returncode != 0:
                    with open(f"{tmp}/{name}.err", "rb") as fh:
                        why = fh.read().decode()[-2000:]
                    raise RuntimeError(f"a benchmark run failed ({p.returncode}): {why}")
            times = {}
            for name in ("plain", "gpubottle"):
                with open(f"{tmp}/{name}.json") as fh:
                    times[name] = json.load(fh)
            p_t, g_t = times["plain"], times["gpubottle"]
            end = min(p_t[-1], g_t[-1])
            a = 1 - _rate(g_t, launched + AFTER_S, end) / _rate(p_t, launched + AFTER_S, end)
            w = 1 - (len(g_t) / (g_t[-1] - launched)) / (len(p_t) / (p_t[-1] - launched))
            share, own_parts = 0.0, dict[str, float]()
            if not aa:
                with open(f"{tmp}/gpubottle{r}/evidence.json") as fh:
                    share, own_parts = own_account(json.load(fh))
                if baseline is None:
                    places.append(split_round({"launched": launched, **times}, Path(f"{tmp}/gpubottle{r}"),
                                              AFTER_S))
            if keep is not None:
                into = keep / f"round{r + 1}"
                into.mkdir(parents=True, exist_ok=True)
                if not aa:
                    shutil.copytree(f"{tmp}/gpubottle{r}", into / "run", dirs_exist_ok=True)
                (into / "times.json").write_text(json.dumps({"launched": launched, "cores": cores, **times}))
                for name in ("plain", "gpubottle"):  # the steps' CPU where recorded (step_times.CPU)
                    if os.path.exists(f"{tmp}/{name}.json.cpu"):
                        shutil.copy(f"{tmp}/{name}.json.cpu", into / f"{name}.cpu.json")
            after.append(a)
            whole.append(w)
            off = apart(p_t, g_t, launched + AFTER_S, end)
            apart_rounds += off is not None
            to_prompt.append(ended["gpubottle"] - launched)
            accounts.append(share)
            for k, v in own_parts.items():
                parts.setdefault(k, []).append(v)
            log(f"  round {r + 1}/{rounds}: {'plain' if baseline is None else 'baseline'} {len(p_t)} steps, "
                f"{'plain again' if aa else 'gpubottle'} "
                f"{len(g_t)}; cost after {AFTER_S:.0f} s {a:+.2%}, whole run {w:+.2%} (first steps at "
                f"{p_t[0] - launched:.1f} s and {g_t[0] - launched:.1f} s)"
                + ("" if aa else f"; its account {share:.2%}")
                + ("" if off is None else f"; apart all through after {AFTER_S:.0f} s: {off:+.1%}"))
    out: dict[str, Any] = {"rounds": rounds, "account": statistics.median(accounts),
                           "account_parts": {k: statistics.median(v + [0.0] * (rounds - len(v)))
                                             for k, v in parts.items()},
                           "to_prompt_s": statistics.median(to_prompt),
                           "apart_rounds": apart_rounds,
                           "in_place": summary(places) if places else {},
                           # (the trading's own CPU, this process's: it lands on either half alike)
                           "swaps_cpu_share": swaps_cpu / max(1e-9, sum(to_prompt))}
    for key, values in (("after", after), ("whole", whole)):
        # A round and the next, its halves swapped, make one measurement: a half that runs this
        # workload faster (here one core was ~4% faster for the threads case) favours each side once.
        pairs = [(a + b) / 2 for a, b in zip(values[::2], values[1::2])] or values
        lo, hi = _interval(pairs)
        out[key] = {"median": statistics.median(pairs), "mean": statistics.fmean(pairs),
                    "low": lo, "high": hi, "values": values, "pairs": len(pairs)}
    return out
