"""Prints whether its stdout is a terminal, then numbered lines slowly."""
import sys
import time

print(f"isatty={sys.stdout.isatty()}", flush=True)
for i in range(12):
    print(f"line {i:02d} " + "x" * 30, flush=True)
    time.sleep(0.15)
