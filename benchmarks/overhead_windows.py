"""The cost of gpubottle's collectors, resolved inside one long run.

A shared VM's speed drifts by several percent from one run to the next (and from one second to the
next), which hides a 1% cost in any comparison of throughputs. Here one training process runs under
the probes for the whole measurement, and the supervisor's collectors (the process-tree sampler and
py-spy, the real classes `gpubottle run` uses) are switched on and off in alternating windows (ON
OFF OFF ON ..., so a linear drift cancels within each group of four). Two measures per group:

- displaced: the seconds per second the training's threads spent runnable but off a core
  (/proc/PID/task/*/schedstat), ON minus OFF. A thread held off a core holds its step (and the
  other threads at the step's next barrier) that long, so this bounds the collectors' cost to a
  CPU-saturated run, and the machine's drift in speed does not enter it.
- throughput: 1 - steps/s(ON) / steps/s(OFF), from the probes' own optimizer-step events: the cost
  itself, but as noisy as the machine.

The probes inside the script stay on throughout: their cost per step is measured apart
(probe_cost_per_step) and added.
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpubottle.collect.process_tree import TreeSampler
from gpubottle.collect.stacks import (
    StackSampler,
    chunk_rate,
    chunk_seconds,
    find_py_spy,
)
from gpubottle.launch.ranks import BOOT, CHILD_ENV
from gpubottle.options import DEFAULT_SAMPLE_HZ, DEFAULT_STACK_RATE, ChildConfig
from gpubottle.wire import OptimizerStep, read_records


def _interval(values: list[float], resamples: int = 4000) -> tuple[float, float]:
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return meds[int(0.025 * resamples)], meds[int(0.975 * resamples) - 1]


def run_delay(pid: int) -> float:
    """Seconds all threads of a process spent runnable but waiting for a core (schedstat)."""
    total = 0.0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                total += int(fh.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return total


def _signal_spy(stack: StackSampler | None, sig: int) -> None:
    """Pause or resume the running py-spy processes (SIGSTOP / SIGCONT)."""
    if stack is None:
        return
    for sampler in list(stack._samplers.values()):
        proc = sampler.proc
        if proc is not None and proc.poll() is None:
            try:
                os.kill(proc.pid, sig)
            except OSError:
                pass


def collectors_cost(script: Path, args: list[str], groups: int, window_s: float,
                    stacks: bool = True, warmup_s: float = 6.0, first_seconds: bool = False,
                    tree: bool = True) -> dict[str, float]:
    """The collectors' cost over `groups` groups of four windows (ON OFF OFF ON). In an ON window
    the supervisor's collectors run as they do after a run's first minute (the process-tree sampler
    at its steady rate, py-spy at its later-chunk rate) or, with first_seconds, as in the first
    15 s (both at the full rate). The tree sampler
    starts afresh each ON window; one py-spy records throughout and is paused (SIGSTOP) in the OFF
    windows, as a run's py-spy samples without restarting within a chunk. What a chunk's start and
    end cost (py-spy's start-up, our conversion of its file) is measured apart and spread over the
    chunk's length: `chunk_cost` (per second of a run, in cores)."""
    with tempfile.TemporaryDirectory() as tmp:
        events = os.path.join(tmp, "events.jsonl")
        open(events, "w").close()
        env = dict(os.environ)
        env[CHILD_ENV] = ChildConfig(events=events, script=str(script)).to_env()
        child = subprocess.Popen([sys.executable, "-c", BOOT, *args], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        windows: list[tuple[float, float, bool, float]] = []
        stack = None
        chunk_cost = 0.0
        try:
            time.sleep(warmup_s)
            if stacks:
                rate = chunk_rate(DEFAULT_STACK_RATE, 0 if first_seconds else 99)
                stack = StackSampler(os.path.join(tmp, "stacks"), rate=rate, chunk_s=3600)
                stack.start(child.pid)
                time.sleep(1.0)  # attached (start-up is counted in chunk_cost instead)
                _signal_spy(stack, signal.SIGSTOP)
            for _g in range(groups):
                for on in (True, False, False, True):
                    t0 = time.monotonic()
                    d0 = run_delay(child.pid)
                    sampler = None
                    out = open(os.path.join(tmp, "samples.jsonl"), "a")  # noqa: SIM115 - closed below
                    if on and tree:
                        sampler = TreeSampler(child.pid, out, 1.0 / DEFAULT_SAMPLE_HZ,
                                              fast_for_s=1e9 if first_seconds else 0.0,
                                              slow_after_s=1e9 if first_seconds else 0.0)
                        sampler.start()
                    if on:
                        _signal_spy(stack, signal.SIGCONT)
                    time.sleep(window_s)
                    if on:
                        _signal_spy(stack, signal.SIGSTOP)
                    if sampler is not None:
                        sampler.stop()
                    out.close()
                    t1 = time.monotonic()
                    windows.append((t0, t1, on, (run_delay(child.pid) - d0) / (t1 - t0)))
                    if child.poll() is not None:
                        raise RuntimeError("the training process ended during the measurement")
            if stack is not None:
                _signal_spy(stack, signal.SIGCONT)
                c0 = time.thread_time()
                stack.stop()  # converts the chunk in this thread
                on_s = sum(w[1] - w[0] for w in windows if w[2])
                chunk_s = chunk_seconds(15.0, 0 if first_seconds else 1)
                chunk_cost = py_spy_start_cpu(child.pid) / chunk_s + (time.thread_time() - c0) / on_s
        finally:
            if stack is not None:
                _signal_spy(stack, signal.SIGCONT)
            child.kill()
            child.wait()
        records, _ = read_records(events)
    steps = sorted(r.t for r in records if isinstance(r, OptimizerStep))
    rates = [sum(1 for t in steps if t0 <= t < t1) / (t1 - t0) for t0, t1, _on, _d in windows]
    costs, displaced = [], []
    for g in range(0, len(windows), 4):
        quad = list(zip(windows[g:g + 4], rates[g:g + 4]))
        on_rate = statistics.fmean(r for w, r in quad if w[2])
        off_rate = statistics.fmean(r for w, r in quad if not w[2])
        costs.append(1 - on_rate / off_rate)
        # The training threads' time displaced from a core per second, ON minus OFF: what the
        # collectors took from them, unaffected by the machine's own drift in speed.
        displaced.append(statistics.fmean(w[3] for w, _r in quad if w[2])
                         - statistics.fmean(w[3] for w, _r in quad if not w[2]))
    offs = [r for (_t0, _t1, on, _d), r in zip(windows, rates) if not on]
    lo, hi = _interval(costs)
    dlo, dhi = _interval(displaced)
    return {"throughput_cost": statistics.median(costs), "throughput_low": lo, "throughput_high": hi,
            "displaced": statistics.median(displaced), "displaced_low": dlo, "displaced_high": dhi,
            "groups": len(costs), "off_spread": (max(offs) - min(offs)) / statistics.median(offs),
            "chunk_cost": chunk_cost}


def py_spy_start_cpu(pid: int, tries: int = 3) -> float:
    """CPU seconds one py-spy start costs (a 1 s record at 1 Hz: start-up, one sample, exit)."""
    binary = find_py_spy()
    if binary is None:
        return 0.0
    best = 1e9
    for _ in range(tries):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([binary, "record", "--pid", str(pid), "--idle", "--nonblocking", "--threads",
                        "--rate", "1", "--duration", "1", "--format", "raw", "-o", os.devnull],
                       capture_output=True, timeout=60)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return best


def probe_cost_per_step() -> dict[str, float]:
    """Seconds the in-script probes add to each hooked call of a training step (DataLoader.__next__,
    backward, optimizer.step) and to building a DataLoader (once per epoch at most): each timed in
    alternating blocks with the probes recording and switched off (what remains then is one
    attribute check), best of several blocks, since the work is fixed and noise only adds."""
    code = """
import os, tempfile, timeit, json
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.set_num_threads(1)
from gpubottle.clock import StepClock
from gpubottle.probes import torch_hooks
from gpubottle.probes.recorder import Recorder, Stopper
rec = Recorder(os.path.join(tempfile.mkdtemp(), "e.jsonl"))
torch_hooks.install(rec, Stopper(rec, StepClock(), None, None), {}, None)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
x = torch.randn(8, 8)
state = {"it": iter(DataLoader(data, batch_size=8))}
def fetch():
    try:
        next(state["it"])
    except StopIteration:
        state["it"] = iter(DataLoader(data, batch_size=8))
def cost(fn, n=2000):
    best = {False: 1e9, True: 1e9}
    for closed in (False, True) * 4:
        rec._closed = closed
        best[closed] = min(best[closed], min(timeit.repeat(fn, number=n, repeat=2)) / n)
    return max(0.0, best[False] - best[True])
out = {
    "optimizer.step": cost(opt.step),
    "backward": cost(lambda: model(x).sum().backward()),
    "DataLoader.__next__": cost(fetch),  # every 8th call also starts an epoch (iter)
    "DataLoader()": cost(lambda: DataLoader(data, batch_size=8), 300),
}
print(json.dumps(out))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result
