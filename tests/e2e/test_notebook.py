"""A real notebook executed headless through a real Jupyter kernel (nbclient, ipykernel): the DataLoader
built in an earlier cell, `%load_ext gpubottle`, two `%%gpubottle` cells in the same kernel, a cell
that fails, a usage error. The report shows inline as the HTML report, once per cell."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT, cpu_slot, with_harness
from nbclient import NotebookClient

from gpubottle import vocabulary as v

SETUP = """\
import time, torch
from torch.utils.data import DataLoader, Dataset

class SlowReads(Dataset):
    def __len__(self):
        return 320
    def __getitem__(self, i):
        time.sleep(0.003)  # storage latency: the loop waits on reads
        return torch.randn(64), i % 2

loader = DataLoader(SlowReads(), batch_size=16)
model = torch.nn.Linear(64, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""

TRAIN = """\
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _text(cell: dict) -> str:
    out = []
    for o in cell.get("outputs", []):
        out.append(o.get("text") or "")
        out.append((o.get("data") or {}).get("text/plain", ""))
        out.append(o.get("ename") or "")
    return "\n".join(out)


def test_gpubottle_cells_in_a_real_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    nb = nbformat.v4.new_notebook()
    cells = [
        SETUP,
        "%load_ext gpubottle",
        "%%gpubottle --json r1.json --out run1\n" + TRAIN,
        "%%gpubottle --json r2.json --out run2 --no-stacks\n" + TRAIN,
        "%%gpubottle --out run3\nfor step, (x, y) in enumerate(loader):\n    if step == 8:\n"
        "        raise ValueError('bad batch')",
        "print(_gpubottle.report['source']['stop_reason'], _gpubottle.run_dir)",
        "%%gpubottle --bogus\nprint('never')",
    ]
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    # The kernel imports gpubottle from this checkout, as the suite's runs do.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", with_harness(path))
    client = NotebookClient(nb, timeout=150, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    with cpu_slot():
        client.execute()
    out = nb.cells
    for k in (2, 3):  # each profiled cell: its report, inline, as HTML (once)
        shown = [o for o in out[k].outputs if o.get("output_type") == "display_data"]
        assert len(shown) == 1 and "text/html" in shown[0]["data"], out[k].outputs
        assert "DATA-STARVED" in shown[0]["data"]["text/html"].upper()
    r1 = json.loads((tmp_path / "r1.json").read_text())
    r2 = json.loads((tmp_path / "r2.json").read_text())
    assert r1["primary"] == r2["primary"] == v.DATA_STARVED  # as `gpubottle run` says of the same loop
    assert len(r1["evidence"]["steps"]["durations_s"]) == len(r2["evidence"]["steps"]["durations_s"]) == 20
    # The loader was built in an earlier cell: known from its first iteration, without a site.
    assert r1["evidence"]["loaders"][0]["dataset_class"] == "SlowReads"
    # Places in the notebook are said as Jupyter shows them, never ipykernel's temporary file:
    # SlowReads.__getitem__ is line 6 of the first cell, whose code the report keeps.
    getitem_line = SETUP.splitlines().index("    def __getitem__(self, i):") + 1
    assert r1["evidence"]["loaders"][0]["dataset_getitem"] == f"cell [1], line {getitem_line}"
    places = [x["where"] for f in r1["findings"] for x in f["fixes"] if x["where"]]
    assert f"cell [1], line {getitem_line}" in places and not any("ipykernel" in w for w in places)
    assert r1["evidence"]["run"]["cells"]["1"] == SETUP
    html = next(o for o in out[2].outputs if o.get("output_type") == "display_data")["data"]["text/html"]
    assert "Notebook cells named above" in html and "cell [1]" in html
    assert r2["evidence"]["run"]["collectors"]["py-spy"]["ok"] is False  # --no-stacks
    # The failing cell: the notebook sees the error as without the magic; the report is written.
    assert [o["ename"] for o in out[4].outputs if o["output_type"] == "error"] == ["ValueError"]
    r3 = json.loads((tmp_path / "run3" / "report.json").read_text())
    assert r3["evidence"]["run"]["exception"] == "ValueError: bad batch"
    assert "failed" in _text(out[5]) and "run3" in _text(out[5])
    assert "%%gpubottle: unrecognized arguments: --bogus" in _text(out[6]) and "never" not in _text(out[6])
