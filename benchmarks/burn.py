"""A known cost, to calibrate paired.py: burns SHARE of a core in CPU, PERIOD_S apart, until the
process that started it ends. step_times.py starts it beside a benchmark script where
BENCH_BURN_SHARE is set (bench_heavy.py --aa --side-env measured:BENCH_BURN_SHARE=0.01): a method that
reads the cost of gpubottle's tree should read this one's as its CPU share, or a little more."""

import os
import sys
import time

PERIOD_S = 0.3  # (not a multiple of paired.py's trades, 0.25 s, nor of the samplers' 1-s grid)


def main() -> None:
    share, parent = float(sys.argv[1]), int(sys.argv[2])
    due = time.monotonic()
    while os.getppid() == parent:
        c0 = time.process_time()
        while time.process_time() - c0 < share * PERIOD_S:
            pass
        due += PERIOD_S
        time.sleep(max(0.0, due - time.monotonic()))


if __name__ == "__main__":
    main()
