"""Prints, as one JSON line, what the script's process was started as and sees: its command line,
argv, working directory and the variables named on its own command line."""
import json
import os
import sys

with open("/proc/self/cmdline", "rb") as fh:
    cmdline = [a.decode() for a in fh.read().split(b"\0") if a]
names = sys.argv[1:]
print(json.dumps({"cmdline": cmdline, "argv": sys.argv, "cwd": os.getcwd(),
                  "env": {n: os.environ.get(n) for n in names}}))
