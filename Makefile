# All set-up happens here: a local virtual environment with the CPU build of torch pinned first, so that
# installing the package never pulls CUDA wheels onto a machine without a GPU.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
TORCH ?= torch==2.13.0

.PHONY: install demo test lint bench gpu-check clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/gpubottle run --out .gpubottle-demo examples/data_starved.py --epochs 2

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests

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
