"""Each example gets the verdict its docstring promises, through the real CLI, and the fix helps."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, machine_loaded
from script_lines import line_of


def _primary_finding(report):
    return next(f for f in report["findings"] if f["category"] == report["primary"])


def test_data_starved_example_and_its_fix_helps(run_profiled):
    # 48 steps: with a dozen workers the batches come in bursts of about a dozen, and a span of two
    # bursts (24 steps) measured half the steady pace under load.
    proc, report = run_profiled(EXAMPLES / "data_starved.py", "--epochs", "1", "--samples", "1536")
    assert proc.returncode == 0, proc.stderr
    assert report["primary"] == "data-starved"
    f = _primary_finding(report)
    assert f["share"] > 0.4 and f["severity"] == "critical"
    fix = next(x for x in f["fixes"] if "num_workers" in x["change"])
    # The script takes its worker count from --num-workers: the fix says so, and points at the option.
    declared = line_of(EXAMPLES / "data_starved.py", 'add_argument("--num-workers"')
    assert fix["where"] == f"examples/data_starved.py:{declared}"
    old, new = fix["change"]["num_workers"]
    assert fix["how"].startswith(f"run with --num-workers {new}")
    assert old == 0 and new >= 2
    before = report["steps"]["mean_s"]
    predicted = fix["expected_step_s"]
    # Reads that wait need no core each: even on a loaded machine the workers overlap them.
    assert predicted < before / 2

    # Apply the fix as the user would, and measure again.
    proc2, report2 = run_profiled(EXAMPLES / "data_starved.py", "--epochs", "1", "--samples", "1536",
                                  "--num-workers", str(new))
    assert proc2.returncode == 0, proc2.stderr
    after = report2["steps"]["mean_s"]
    # The run got as fast as the fix predicted (at least half the predicted speed-up), and the wait
    # shrank. Beside other programs' load (named: cpu-contention) the workers get less CPU than the
    # plan assumed: there it must still be clearly faster; tests/check_fixes times it on a quiet machine.
    loaded = machine_loaded(report) or machine_loaded(report2)
    gain = 1.5 if loaded else 1 + (before / predicted - 1) / 2
    assert before / after >= gain, (before, predicted, after, loaded)
    assert report2["steps"]["input_wait_share"] < f["share"] * 0.75
    # Its dataset makes its samples (a tensor and numbers held): nothing for workers to copy.
    assert report2["evidence"]["loaders"][0]["dataset_objects"] == 0


def test_compute_bound_example(replayed_run):
    proc, report = replayed_run(EXAMPLES / "compute_bound.py", "--steps", "40", "--width", "512")
    assert proc.returncode == 0, proc.stderr
    assert report["primary"] == "compute-bound"
    assert not any(f["category"] in ("data-starved", "preprocessing-bound") for f in report["findings"])
    # The model's math, not the loop's own code: faster math is the fix, nothing "outside the model".
    assert "outside the model" not in report["findings"][0]["summary"]
    outside = report["evidence"]["stacks"]["main_outside_model"]
    assert outside == [] or outside[0]["share"] < 0.3
    # bf16 autocast is advised as the run's CPU allows it (native, emulated, or unknown; read live
    # in tests/e2e/test_api.py).
    bf16 = report["evidence"]["cpu"]["bf16"]
    faster = report["findings"][0]["fixes"][-1]["text"]
    expected = {True: "this CPU computes bf16 natively", False: "not bfloat16 autocast", None: "time it"}
    assert expected[bf16] in faster, faster


@pytest.mark.light
def test_oom_risk_example(replayed_run):
    proc, report = replayed_run(EXAMPLES / "oom_risk.py", "--seconds", "11")
    assert proc.returncode == 0, proc.stderr
    assert report["primary"] == "oom-risk"
    f = _primary_finding(report)
    assert f["severity"] == "critical"
    assert any("grows" in e["text"] for e in f["evidence"])
    growth = report["evidence"]["memory"]["growth_bytes_per_s"]
    assert growth > 5 * (1 << 20)


def test_a_loader_built_by_the_hf_trainer_gets_trainingarguments_fixes(replayed_run, tmp_path: Path):
    """A stand-in `transformers` package installed in a site-packages folder (a library to
    gpubottle, as the real one is) builds the DataLoader: the fix names dataloader_num_workers."""
    lib = tmp_path / "site-packages" / "transformers"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("from transformers.trainer import Trainer\n")
    (lib / "trainer.py").write_text(
        "import torch\n"
        "from torch.utils.data import DataLoader\n\n"
        "class Trainer:\n"
        "    def __init__(self, model, dataset, workers=0):\n"
        "        self.model, self.dataset, self.workers = model, dataset, workers\n\n"
        "    def train(self, steps):\n"
        "        loader = DataLoader(self.dataset, batch_size=8, num_workers=self.workers)\n"
        "        opt = torch.optim.SGD(self.model.parameters(), lr=0.01)\n"
        "        for i, (x, y) in enumerate(loader):\n"
        "            loss = torch.nn.functional.mse_loss(self.model(x), y)\n"
        "            opt.zero_grad(); loss.backward(); opt.step()\n"
        "            if i == steps:\n"
        "                break\n")
    script = tmp_path / "train_hf.py"
    script.write_text(
        "import time, torch\n"
        "from transformers import Trainer\n\n"
        "class Slow(torch.utils.data.Dataset):\n"
        "    def __len__(self): return 10000\n"
        "    def __getitem__(self, i):\n"
        "        time.sleep(0.002)\n"
        "        return torch.randn(16), torch.randn(1)\n\n"
        "Trainer(torch.nn.Linear(16, 1), Slow()).train(40)\n")
    proc, rep = replayed_run(script, opts=("--no-stacks",), env={"PYTHONPATH": str(lib.parent)},
                             cwd=tmp_path)
    assert proc.returncode == 0 and rep is not None, proc.stderr
    assert rep["evidence"]["loaders"][0]["built_by"] == "transformers.trainer.Trainer.train"
    assert rep["evidence"]["loaders"][0]["site"].endswith("train_hf.py:10")
    assert rep["primary"] == "data-starved"
    fix = rep["findings"][0]["fixes"][0]
    assert "dataloader_num_workers" in fix["change"] and "num_workers" not in fix["change"]
    assert "TrainingArguments(dataloader_num_workers=" in fix["text"]


