"""Run an example under gpubottle.profile() in this process, torch imported first (as in a notebook),
twice when asked (the second use of the same process), and print each report's verdict as JSON.

    python profile_example.py EXAMPLE OUT_DIR [--twice] [-- EXAMPLE_ARGS...]
"""

import json
import runpy
import sys

import torch  # noqa: F401 - imported before the profile starts, as a notebook does

import gpubottle

example, out = sys.argv[1], sys.argv[2]
rest = sys.argv[3:]
twice = "--twice" in rest
args = rest[rest.index("--") + 1:] if "--" in rest else []
results = []
for use in range(2 if twice else 1):
    sys.argv = [example, *args]
    with gpubottle.profile(out=f"{out}/use{use}", show=use == 0) as p:
        runpy.run_path(example, run_name="__main__")
    results.append({"primary": p.report["primary"] if p.report else None, "run_dir": p.run_dir})
print("RESULTS " + json.dumps(results), flush=True)
