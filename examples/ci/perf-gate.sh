#!/usr/bin/env bash
# Run a short training job under gpubottle and gate it against the committed baseline.
#
#   examples/ci/perf-gate.sh [TRAIN_SCRIPT] [BASELINE_JSON]
#
# With no baseline yet, it records one (commit it; see examples/ci/README.md) and exits 0.
# Exit codes are gpubottle gate's: 0 passed, 1 a budget failed, 5 undecided (inside the noise).
set -euo pipefail
script=${1:-examples/compute_bound.py}
baseline=${2:-examples/ci/baseline.json}
out=${GPUBOTTLE_OUT:-gpubottle-ci}
steps=${GPUBOTTLE_STEPS:-120}
mkdir -p "$out"

# gpubottle's own options come before the script: everything after it is the script's.
gpubottle run --no-status --steps "$steps" --out "$out/run" --json "$out/current.json" "$script"

if [ ! -f "$baseline" ]; then
  cp "$out/current.json" "$baseline"
  echo "no baseline yet: recorded $baseline from this run; commit it to gate later runs"
  exit 0
fi
gpubottle gate "$out/current.json" --baseline "$baseline" \
  --max-regression 10% --forbid data-starved,preprocessing-bound,oom-risk \
  --junit "$out/gate.xml" --markdown "$out/gate.md"
