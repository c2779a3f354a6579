"""probes/saves.py on a real torch.save of a real model and optimizer: the save is timed and
recorded, and of what it wrote, the bytes that are the training's state (the model's weights and
buffers, the optimizer's state) are told from the rest (a history of tensors kept beside them)."""

from __future__ import annotations

import types
from pathlib import Path

import torch
from recorders import ListRecorder
from script_lines import line_of

from gpubottle.probes.hooks import StepHooks
from gpubottle.probes.saves import SaveProbe, state_bytes
from gpubottle.wire import Saved


def _training() -> tuple[torch.nn.Module, torch.optim.Optimizer, StepHooks]:
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.BatchNorm1d(128), torch.nn.Linear(128, 4))
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(8, 64)).sum().backward()
    opt.step()  # Adam's state: exp_avg and exp_avg_sq per parameter, and a step count
    hooks = StepHooks()  # the optimizers the probes saw built, the modules the loop calls
    hooks.optimizers.add(opt)
    hooks.models.add(model)
    return model, opt, hooks


def _nbytes(tensors) -> int:
    return sum(t.untyped_storage().nbytes() for t in tensors)


def test_the_training_state_in_a_saved_object_is_counted_by_storage() -> None:
    model, opt, hooks = _training()
    weights = _nbytes([*model.parameters(), *model.buffers()])
    state = _nbytes([v for s in opt.state.values() for v in s.values()])
    ckpt = {"model": model.state_dict(), "opt": opt.state_dict(), "step": 10}
    assert state_bytes(ckpt, hooks) == weights + state
    # What resuming does not need is not counted: a history of outputs kept beside them
    ckpt["history"] = [torch.zeros(1 << 16) for _ in range(4)]
    assert state_bytes(ckpt, hooks) == weights + state
    assert state_bytes(model, hooks) == weights  # a whole module saved
    # No optimizer or model known to the probes: not known
    assert state_bytes(ckpt, StepHooks()) is None
    assert state_bytes(ckpt, None) is None


def test_a_real_save_is_recorded_with_its_size_and_state(tmp_path: Path) -> None:
    model, opt, hooks = _training()
    rec = ListRecorder()
    probe = SaveProbe(rec, hooks)  # type: ignore[arg-type]
    fake = types.SimpleNamespace(save=torch.save)  # wrapped in its own namespace: torch's stays
    assert probe.wrap(fake, "save", "torch.save") is None
    extra = torch.zeros(1 << 18)  # 1 MiB of float32
    fake.save({"model": model.state_dict(), "opt": opt.state_dict(), "extra": extra}, tmp_path / "ck.pt")
    [saved] = [r for r in rec.records if isinstance(r, Saved)]
    written = (tmp_path / "ck.pt").stat().st_size
    assert saved.what == "torch.save" and saved.bytes == written and saved.main == 1
    assert saved.state is not None and saved.state == state_bytes({"m": model, "o": opt.state_dict()}, hooks)
    assert written - saved.state >= extra.untyped_storage().nbytes()
    assert saved.site is not None and saved.site.endswith("test_saves.py:" + str(_line("fake.save({")))


def _line(text: str) -> int:
    return line_of(Path(__file__), text)
