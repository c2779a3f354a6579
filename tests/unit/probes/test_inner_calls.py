"""Loops in the model's forward, counted in a real counted step (probes/model_calls.py,
probes/inner_calls.py): an RNN cell stepped in a Python loop (its calls, the user's line and name
for it, its sizes and its forwards' time; a cell called a few times, a two-step unroll, and nn.LSTM
over the sequence are not recorded), and a submodule called once per sample of the batch (with
its input's shape and the batch's)."""

from __future__ import annotations

from pathlib import Path

import torch
from recorders import ListRecorder

from gpubottle.probes.inner_calls import CELL_CALLS_MIN
from gpubottle.probes.model_calls import COUNT_STEP, ModelCallCounter
from gpubottle.wire import ModelCalls


class Stepped(torch.nn.Module):
    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.cell = torch.nn.LSTMCell(8, 16)
        self.lstm = torch.nn.LSTM(8, 16, batch_first=True)

    def forward(self, e: torch.Tensor) -> torch.Tensor:
        h = c = torch.zeros(e.size(0), 16)
        for t in range(self.steps):
            h, c = self.cell(e[:, t], (h, c))  # the cell's line
        out, _ = self.lstm(e)
        return h + out[:, -1]


def _counted(steps: int) -> ModelCalls:
    return _step(Stepped(steps), torch.randn(4, 20, 8))


def _step(model: torch.nn.Module, x: torch.Tensor) -> ModelCalls:
    """One training step of `model` on `x`, counted; the probe's record of it."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = ListRecorder()
    probe = ModelCallCounter(rec, None, [opt])
    for step in range(1, COUNT_STEP + 1):
        probe.on_step(step)
    model(x).sum().backward()
    opt.step()
    probe.on_step(COUNT_STEP + 1)
    probe.on_step(COUNT_STEP + 2)
    assert not probe.handles  # removed
    [calls] = [r for r in rec.records if isinstance(r, ModelCalls)]
    return calls


def test_a_cell_stepped_over_the_sequence_is_counted_with_its_line_and_name() -> None:
    calls = _counted(20)
    [cell] = calls.cells or []
    cls, name, site, n, input_size, hidden_size, spent, step_s = cell
    assert (cls, name, n, input_size, hidden_size) == ("LSTMCell", "self.cell", 20, 8, 16), cell
    lines = Path(__file__).read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.endswith("# the cell's line"))
    assert site is not None and site.endswith(f"test_inner_calls.py:{line}"), site
    assert 0 < spent < step_s, cell


def test_a_short_unroll_and_the_whole_sequence_module_are_not_recorded() -> None:
    assert _counted(CELL_CALLS_MIN - 1).cells is None


class PerSample(torch.nn.Module):
    """An encoder called on each sample of the batch in turn (its Linear layers, inside it, are its
    parts: not recorded apart), and a head called once."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16))
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = [self.enc(x[i]).mean(0) for i in range(x.size(0))]  # the encoder's line
        return self.head(torch.stack(feats))


def test_a_submodule_called_once_per_sample_is_recorded_with_both_shapes() -> None:
    calls = _step(PerSample(), torch.randn(6, 5, 8))
    [inner] = calls.inner or []
    cls, name, site, n, shape, batch = inner
    assert (cls, name, n, shape, batch) == ("Sequential", "self.enc", 6, [5, 8], [6, 5, 8]), inner
    lines = Path(__file__).read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.endswith("# the encoder's line"))
    assert site is not None and site.endswith(f"test_inner_calls.py:{line}"), site
    assert calls.cells is None


def test_a_failing_inner_count_leaves_the_forward_and_the_steps_other_records(monkeypatch) -> None:
    from gpubottle.probes import inner_calls

    def broken(*args: object) -> None:
        raise RuntimeError("broken probe")

    monkeypatch.setattr(inner_calls.InnerCalls, "pre", broken)
    calls = _counted(20)  # the forward ran through its 20 cell calls
    assert calls.cells is None and calls.inner is None and calls.calls == 1
