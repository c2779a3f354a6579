"""A training loop with many threads on a saturated machine: torch's intra-op pool at the machine's
core count, and a pool of Python threads preparing batches (as a script with a threaded prefetcher
or a threaded augmentation does), together asking for more cores than there are. py-spy walks
every thread's stack at each sample and the tree sampler reads each thread's counters, so this is
where their cost grows with the run's shape. Prints its throughput after the first 20 steps, as
examples/compute_bound.py does (benchmarks/bench_heavy.py reads it).

    python benchmarks/many_threads.py [--seconds 20] [--threads 16]
"""

import argparse
import os
import queue
import threading
import time

import step_times
import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=20.0)
p.add_argument("--threads", type=int, default=16)
a = p.parse_args()
torch.manual_seed(0)
torch.set_num_threads(len(os.sched_getaffinity(0)))  # the cores this run may use
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batches: queue.Queue[tuple[torch.Tensor, torch.Tensor]] = queue.Queue(maxsize=64)
stop = threading.Event()


def prepare() -> None:
    """A batch's preparation in Python (a per-sample normalisation): holds the GIL most of its time.
    A full queue is waited out with the batch kept, as a prefetcher does: one that dropped its batch
    when a put timed out (this script until 2026-11-29) threw away 9-13% of its batches, plain python
    too, 16 threads waiting ~60 ms each for a slot against a 0.1-s timeout; any microsecond added
    to a step pushed more waits past it and came back as more batches made again, on the same core."""
    while not stop.is_set():
        rows = [[((i * 31 + j) % 97) / 97.0 for j in range(512)] for i in range(8)]
        x = torch.tensor(rows).repeat(16, 1)
        item = (x, torch.randint(0, 10, (128,)))
        while not stop.is_set():
            try:
                batches.put(item, timeout=0.1)
                break
            except queue.Full:
                pass


pool = [threading.Thread(target=prepare, daemon=True) for _ in range(a.threads)]
for t in pool:
    t.start()
start = time.perf_counter()
steps, t20 = 0, None
while time.perf_counter() - start < a.seconds:
    x, y = batches.get()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    step_times.mark()
    steps += 1
    if steps == 20:
        t20 = time.perf_counter()
stop.set()
for t in pool:  # a daemon thread still inside torch when the interpreter ends aborts it (SIGABRT)
    t.join()
elapsed = time.perf_counter() - (t20 or start)
print(f"threads: {threading.active_count()} python, {torch.get_num_threads()} torch")
print(f"throughput: {(steps - 20) / elapsed:.3f} steps/s")
step_times.write()
