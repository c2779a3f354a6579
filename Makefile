# All set-up happens here: a local virtual environment with the CPU build of torch pinned first, so that
# installing the package never pulls CUDA wheels onto a machine without a GPU.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
TORCH ?= torch==2.13.0

.PHONY: install demo test check-fixes lint bench gpu-check clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/gpubottle run --out .gpubottle-demo examples/data_starved.py --epochs 2

# Two at a time: most tests wait on a training script, and two stay under 5 minutes on 2 cores
# even with other programs loading the machine. The applied-fix timings run alone (check-fixes).
test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n 2 tests --ignore=tests/check_fixes

# Apply gpubottle's fixes to the shapes in tests/scripts/fixes, time them, print predicted vs
# measured. Timing needs a quiet machine: nothing else runs beside them.
check-fixes: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -s tests/check_fixes

lint: $(STAMP)
	$(VENV)/bin/ruff check gpubottle tests examples benchmarks
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) benchmarks/bench_overhead.py
	$(PY) benchmarks/bench_trace.py

# On a GPU machine with a CUDA build of torch already installed: run the GPU examples, check verdicts.
gpu-check:
	python3 -m pip install -q -e . --no-deps
	python3 examples/gpu/check.py

clean:
	rm -rf $(VENV) .gpubottle-demo gpubottle-runs .pytest_cache
