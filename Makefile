# All set-up happens here: a local virtual environment with the CPU build of torch pinned first, so that
# installing the package never pulls CUDA wheels onto a machine without a GPU.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
TORCH ?= torch==2.13.0

.PHONY: install demo test unit record-runs check-fixes lint bench browser-check gpu-check gpu-wheels clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m compileall -q gpubottle
	$(VENV)/bin/gpubottle run --out .gpubottle-demo examples/data_starved.py --epochs 2

# Four test processes, at most three training runs at a time (a lock in tests/conftest.py, which
# says why three): most runs wait on a training script, and the ones that mostly sleep for a fixed
# time (marked `light`: leaks, durations) go beside them.
# worksteal: a worker that runs out takes the others' pending tests, so no long run starts last.
# The applied-fix timings and --try-fixes' speed-ups run alone (check-fixes).
# compileall first: where PYTHONDONTWRITEBYTECODE is set (this machine sets it) no .pyc is ever
# written for the checkout, and each of the suite's ~250 Pythons that import gpubottle would compile
# its modules afresh (0.57 s of CPU for the CLI's 121 modules, 0.24 s from .pyc). Stale .pyc files
# are only ignored, never wrong: Python checks each against its source.
# Four test processes for three run slots (tests/conftest.py): the fourth takes the tests whose runs
# mostly sleep (the leak censuses' 14-s runs) and the in-process ones beside three training runs
# (measured 2026-11-30 on a slow hour: 4:52 against 4:59 and 5:06 with three).
test: $(STAMP)
	$(PY) -m compileall -q gpubottle tests/support tests/harness
	$(PY) -m pytest -q -p no:cacheprovider -n 4 --dist worksteal tests --ignore=tests/check_fixes

# The raw runs tests/runs/ keeps for the tests that diagnose a recorded run (`replayed_run`): each
# such test without a recording of its script and command runs live, and its run is kept when the
# test passes (RECORD=all: every one again, after a change to what the collectors write). Run it
# on a quiet machine and commit tests/runs/.
RECORD ?= missing
record-runs: $(STAMP)
	$(PY) -m compileall -q gpubottle tests/support tests/harness
	GPUBOTTLE_RECORD_RUNS=$(RECORD) $(PY) -m pytest -q -p no:cacheprovider -n 2 -m replayed tests --ignore=tests/check_fixes

# The unit tests alone (tests/unit: no subprocess), in seconds.
unit: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m unit tests --ignore=tests/check_fixes

# Apply gpubottle's fixes to the shapes in tests/scripts/fixes, time them, print predicted vs
# measured. Timing needs a quiet machine: nothing else runs beside them.
check-fixes: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -s tests/check_fixes

lint: $(STAMP)
	$(VENV)/bin/ruff check gpubottle tests examples benchmarks
	$(VENV)/bin/mypy

# compileall first, as `test`: a user's install has its .pyc files; without them (PYTHONDONTWRITEBYTECODE)
# every `gpubottle run` in the rounds compiles its modules again, a cost no user pays.
bench: $(STAMP)
	$(PY) -m compileall -q gpubottle
	$(PY) benchmarks/bench_overhead.py
	$(PY) benchmarks/bench_heavy.py --hold-guest-pages
	$(PY) benchmarks/bench_trace.py

# The demo run's HTML report (.gpubottle-demo/index.html) rendered by headless Chromium to a PNG, as a
# reader would see it. Chromium comes from the distribution's packages (installed here when missing).
CHROMIUM ?= chromium
browser-check: $(STAMP)
	command -v $(CHROMIUM) >/dev/null || (apt-get update -q && apt-get install -y -q chromium)
	[ -f .gpubottle-demo/index.html ] || $(MAKE) demo
	$(CHROMIUM) --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir=$$(mktemp -d) --window-size=800,2000 \
		--screenshot=$(CURDIR)/.gpubottle-demo/index.png file://$(CURDIR)/.gpubottle-demo/index.html
	$(PY) -c "import sys; from PIL import Image; im = Image.open('.gpubottle-demo/index.png'); \
		print('screenshot', im.size, 'colours', len(im.getcolors(1 << 24) or [])); \
		sys.exit(0 if len(im.getcolors(1 << 24) or []) > 8 else 1)"

# On a GPU machine whose python3 holds a CUDA build of torch: the GPU examples with their verdicts,
# their CUDA traces read back by `report`, a two-rank job and the overhead on a GPU-bound run, in one
# call (results in $(GPU_OUT)/results.md). It runs with that python3 as it is (on the lent machines
# it is itself a venv, and a venv made from it would not see its torch): what it lacks of gpubottle's
# dependencies is installed from $(WHEELS)/ into $(GPU_DEPS), a folder on PYTHONPATH; nothing is
# installed into the interpreter. Where there is no network, fill $(WHEELS) first with `make
# gpu-wheels` (for the GPU machine's Python version) and carry it.
GPU_PYTHON ?= python3
GPU_DEPS ?= .gpu-deps
GPU_OUT ?= $(if $(OUT),$(OUT),gpubottle-gpu-check)
WHEELS ?= .whl
GPU_PY_VERSION ?= 3.12
gpu-check:
	$(GPU_PYTHON) examples/gpu/check.py --out $(GPU_OUT) --wheels $(WHEELS) --deps $(GPU_DEPS)

# Wheels of gpubottle's dependencies for a GPU machine without network (CPython $(GPU_PY_VERSION), x86-64).
gpu-wheels:
	python3 -m pip download -q --only-binary=:all: --python-version $(GPU_PY_VERSION) --implementation cp \
		--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
		--platform manylinux2014_x86_64 -d $(WHEELS) $$(python3 examples/gpu/check.py --print-deps)

clean:
	rm -rf $(VENV) $(GPU_DEPS) .gpubottle-demo gpubottle-runs gpubottle-gpu-check .pytest_cache
