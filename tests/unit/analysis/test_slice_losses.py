"""analysis/slice_losses.py: a loss added up slice by slice of the model's output in a loop and
backpropagated is found from the model's call (in the loop's own code, or in a function of the
file the output is passed to); slices of the targets alone, or a sum no backward() reads, are not."""

from __future__ import annotations

import linecache
from pathlib import Path

from gpubottle.analysis.slice_losses import slice_loss


def _site(tmp_path: Path, name: str, text: str, call: str = "logits = model(x)") -> str:
    path = tmp_path / name
    path.write_text(text)
    linecache.checkcache(str(path))
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == call)
    return f"{path}:{line}"


LOOP = """\
for step in range(10):
    logits = model(x)
    loss = 0
    for t in range(T):
        loss = loss + crit(logits[:, t, :], y[:, t])
    loss = loss / T
    opt.zero_grad()
    loss.backward()
"""

HELPER = """\
import torch.nn.functional as F

def seq_loss(out, target):
    total = 0.0
    for t in range(out.size(1)):
        total += F.cross_entropy(out[:, t], target[:, t])
    return total / out.size(1)

def train(model, x, y):
    logits = model(x)
    loss = seq_loss(logits, y)
    loss.backward()
"""

APPENDED = """\
def step(model, x, y):
    out = model(x)
    probs = out.log_softmax(-1)
    losses = []
    for k, col in enumerate(range(probs.size(0))):
        losses.append(-(probs[k] * y[k]).sum())
    torch.stack(losses).mean().backward()
"""


def test_a_loss_added_up_by_time_step_is_found_with_its_slice_and_dimension(tmp_path: Path) -> None:
    found = slice_loss(_site(tmp_path, "loop.py", LOOP), None)
    assert found is not None
    assert found.site.endswith("loop.py:4") and found.header == "for t in range(T):"
    assert (found.tensor, found.index, found.dim, found.call) == ("logits", "logits[:, t, :]", 1, "crit")
    assert found.target == "y"  # the fix's one loss takes it whole too
    assert found.function is None


def test_in_a_function_the_output_is_passed_to_and_by_a_list_of_losses_too(tmp_path: Path) -> None:
    found = slice_loss(_site(tmp_path, "helper.py", HELPER), None)
    assert found is not None and found.function == "seq_loss" and found.site.endswith("helper.py:5")
    assert (found.tensor, found.index, found.dim, found.call) == ("out", "out[:, t]", 1, "F.cross_entropy")
    found = slice_loss(_site(tmp_path, "appended.py", APPENDED, "out = model(x)"), None)
    assert found is not None and (found.tensor, found.index, found.dim) == ("probs", "probs[k]", 0)


def test_slices_of_the_targets_alone_or_a_sum_no_backward_reads_are_not(tmp_path: Path) -> None:
    targets = LOOP.replace("crit(logits[:, t, :], y[:, t])", "crit(logits, y[:, t])")
    assert slice_loss(_site(tmp_path, "targets.py", targets), None) is None
    metric = LOOP.replace("    loss.backward()\n", "    print(loss)\n")
    assert slice_loss(_site(tmp_path, "metric.py", metric), None) is None
    assert slice_loss(None, None) is None


MODULE_LOSS = """\
import torch
from torch import nn


class SeqLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.ce = nn.CrossEntropyLoss()

    def forward(self, logits, targets):
        loss = 0.0
        for t in range(logits.size(1)):
            loss += self.ce(logits[:, t], targets[:, t])
        return loss / logits.size(1)


crit = SeqLoss().to("cpu")
for step in range(10):
    logits = model(x)
    loss = crit(logits, y)
    loss.backward()
"""

METHOD_LOSS = """\
class Trainer:
    def __init__(self, model):
        self.model = model

    def seq_loss(self, out, target):
        losses = []
        for t, _ in enumerate(range(out.shape[1])):
            losses.append(F.nll_loss(out[:, t], target[:, t]))
        return sum(losses)

    def step(self, x, y):
        logits = self.model(x)
        loss = self.seq_loss(target=y, out=logits)
        loss.backward()
"""


def test_in_a_loss_modules_forward_or_a_method_the_output_is_passed_to(tmp_path: Path) -> None:
    """A loss module of the file called on the output (its forward; made with `.to(...)` too), a
    method called by self with the output as a keyword: the loop is found in either, and named by
    its class."""
    found = slice_loss(_site(tmp_path, "module.py", MODULE_LOSS), None)
    assert found is not None and found.function == "SeqLoss.forward" and found.site.endswith("module.py:12")
    assert (found.tensor, found.index, found.dim, found.call, found.target) == (
        "logits", "logits[:, t]", 1, "self.ce", "targets")
    found = slice_loss(_site(tmp_path, "method.py", METHOD_LOSS, "logits = self.model(x)"), None)
    assert found is not None and found.function == "Trainer.seq_loss" and found.site.endswith("method.py:7")
    assert (found.tensor, found.index, found.dim, found.call) == ("out", "out[:, t]", 1, "F.nll_loss")
    # A module of the file whose forward takes no slices, or a loss from torch: nothing found.
    plain = MODULE_LOSS.replace("crit = SeqLoss()", "crit = nn.CrossEntropyLoss()")
    assert slice_loss(_site(tmp_path, "torch_loss.py", plain), None) is None
    whole = MODULE_LOSS.replace("self.ce(logits[:, t], targets[:, t])",
                                "self.ce(logits.sum(1), targets[:, t])")
    assert slice_loss(_site(tmp_path, "whole.py", whole), None) is None


FORWARD_CALLED = """\
import torch.nn as nn
import torch.nn.functional as F


class Tagger(nn.Module):
    def forward(self, x):
        return self.out(self.rnn(x)[0])


class SeqLoss(nn.Module):
    def forward(self, logits, targets):
        total = 0.0
        for t in range(logits.size(1)):
            total = total + F.cross_entropy(logits[:, t], targets[:, t])
        return total


model, criterion = Tagger(), SeqLoss()
for step in range(10):
    logits = model(x)
    loss = criterion.forward(logits, y)
    loss.backward()
"""


def test_a_loss_modules_forward_called_by_name_where_the_model_has_one_too(tmp_path: Path) -> None:
    """`criterion.forward(logits, y)`: the instance's class says which forward runs, though the
    file's model class has a forward as well (two classes with the method, neither chosen before)."""
    found = slice_loss(_site(tmp_path, "fwd.py", FORWARD_CALLED), None)
    assert found is not None and found.function == "SeqLoss.forward" and found.site.endswith("fwd.py:13")
    assert (found.tensor, found.index, found.dim, found.call) == (
        "logits", "logits[:, t]", 1, "F.cross_entropy")
    # An instance of a class the file does not hold: nothing to read.
    other = FORWARD_CALLED.replace("criterion = Tagger(), SeqLoss()", "criterion = Tagger(), nn.CTCLoss()")
    assert slice_loss(_site(tmp_path, "ctc.py", other), None) is None
