"""What the asynchronous-device shapes share: the fake device installed, host work that takes CPU
time, and the truth written at the end (tests/support/fake_cuda.py)."""

import atexit
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "support"))
import fake_cuda  # noqa: E402

fake_cuda.install()
atexit.register(fake_cuda.write_truth)
kernel, on_device, step_done = fake_cuda.kernel, fake_cuda.on_device, fake_cuda.step_done


def host_work(seconds: float) -> None:
    """CPU time on this thread (launching kernels, Python bookkeeping)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
