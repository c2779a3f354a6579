"""A TorchScript model: the line that made it, read from the script (analysis/scripted.py), and
the compute-bound fix that compiles the eager module in its place, since torch.compile refuses a
TorchScript one (checked against the installed torch below)."""

from __future__ import annotations

import pytest
import torch
from factories import evidence

from gpubottle.analysis.scripted import SCRIPT_CLASSES, scripted
from gpubottle.evidence import ModelCallCount, Scripted
from gpubottle.rules import diagnose

# (torch.jit.script and trace warn that they are deprecated, at every call)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_SCRIPT = """import torch
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x):
        return x

helper = torch.jit.script(nn.Linear(2, 2))
model = torch.jit.script(Net())
traced = torch.jit.trace(model, torch.zeros(1))
for step in range(3):
    model(torch.zeros(1))
"""


def test_torch_compile_refuses_a_torchscript_module_which_is_why_the_fix_compiles_the_eager_one():
    made = torch.jit.script(torch.nn.Linear(2, 2))
    assert type(made).__name__ in SCRIPT_CLASSES
    assert type(torch.jit.trace(torch.nn.Linear(2, 2), torch.zeros(1, 2))).__name__ in SCRIPT_CLASSES
    # (refused before any backend is asked: "eager" spares the check importing inductor, ~2.5 s)
    with pytest.raises(RuntimeError, match="does not support compiling torch.jit.script"):
        torch.compile(made, backend="eager")


def test_the_line_that_made_the_module_is_found_by_the_name_the_step_calls_it(tmp_path):
    (tmp_path / "train.py").write_text(_SCRIPT)
    got = scripted("RecursiveScriptModule", "train.py:12", str(tmp_path), ["model"])
    assert got == Scripted("torch.jit.script", "train.py:9", "Net()", "model")
    # Called by a name no line assigns: the first such line.
    got = scripted("RecursiveScriptModule", "train.py:12", str(tmp_path), ["net"])
    assert got == Scripted("torch.jit.script", "train.py:8", "nn.Linear(2, 2)", "helper")
    got = scripted("TopLevelTracedModule", "train.py:12", str(tmp_path), ["traced"])
    assert got == Scripted("torch.jit.trace", "train.py:10", "model", "traced")


def test_an_eager_module_or_an_unreadable_line_gives_what_is_known():
    assert scripted("Net", "train.py:12", "/nowhere", ["model"]) is None
    assert scripted("RecursiveScriptModule", "cell [3], line 2", None, ["model"]) == \
        Scripted("TorchScript", None, None, None)
    assert scripted("RecursiveScriptModule", "gone.py:2", "/nowhere", None) == \
        Scripted("TorchScript", None, None, None)


def test_the_compute_bound_fix_compiles_the_eager_module_in_place_of_the_scripting_line():
    ev = evidence(step_s=0.1, wait_s=0.0005, wait_cpu_s=0.0005, main=1.9, tree=1.9, cores=2,
                  torch_threads=2)
    ev.model_calls = ModelCallCount("RecursiveScriptModule", "train.py:12", 1, 64, ["model"],
                                    scripted=Scripted("torch.jit.script", "train.py:9", "Net()", "model"))
    text = diagnose(ev).findings[0].fixes[-1].text
    assert text.startswith("run the math faster: model = torch.compile(Net()) in place of the "
                           "torch.jit.script call at train.py:9 (torch.compile refuses a TorchScript "
                           "module; it compiles the eager one) (compiling adds"), text
    assert "model = torch.compile(model)" not in text
    ev.model_calls.scripted = Scripted("TorchScript", None, None, None)
    text = diagnose(ev).findings[0].fixes[-1].text
    assert "torch.compile on the eager module the TorchScript model was made from" in text, text
