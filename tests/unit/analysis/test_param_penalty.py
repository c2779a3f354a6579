"""Which counted parameter-op lines are a penalty the loss trains on (analysis/param_penalty.py), on
real files shaped like scripts: the line's result flows into backward() (a weight norm logged beside
is not), and its form, a sum of squares or not."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.param_penalty import param_penalty, squared

SCRIPT = '''\
for xb, yb in loader:
    loss = crit(model(xb), yb)
    l2 = sum(p.pow(2.0).sum() for p in model.parameters())
    loss = loss + lam * l2
    norms = [p.norm() for p in model.parameters()]
    print(max(norms))
    l1 = sum(p.abs().sum() for p in model.parameters())
    opt.zero_grad()
    (loss + mu * l1).backward()
    opt.step()
'''


def _row(path: Path, line: int) -> list[object]:
    return [f"{path}:{line}", 90, 30, 0.0003, ["pow"]]


def test_the_line_whose_result_reaches_backward_is_the_penalty(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    p = param_penalty([_row(path, 5), _row(path, 3)])  # the logged norms first: passed over
    assert p is not None and p.site == f"{path}:3" and p.squared and p.tensors == 30 and p.ops == 90
    l1 = param_penalty([_row(path, 7)])
    assert l1 is not None and not l1.squared
    assert param_penalty([_row(path, 5)]) is None and param_penalty(None) is None


def test_sums_of_squares_are_told_from_other_penalties() -> None:
    for text in ("sum(p.pow(2).sum() for p in ps)", "sum((p ** 2).sum() for p in ps)",
                 "sum(torch.square(p).sum() for p in ps)", "sum(p.norm() ** 2 for p in ps)",
                 "sum((w * w).sum() for w in ps)"):
        assert squared(text), text
    for text in ("sum(p.abs().sum() for p in ps)", "sum(p.norm() for p in ps)", "sum(p.pow(2).abs()...)"):
        assert not squared(text), text


HELPER = '''\
def l2_penalty(m):
    return sum((w ** 2).sum() for w in m.parameters())


for xb, yb in loader:
    l2 = l2_penalty(model)
    loss = crit(model(xb), yb) + lam * l2
    loss.backward()
'''


def test_a_helper_s_return_is_said_at_the_line_that_called_it(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(HELPER)
    p = param_penalty([[f"{path}:2", 90, 30, 0.0003, ["pow"], f"{path}:6"]])
    assert p is not None and p.site == f"{path}:6" and p.squared, p
    assert param_penalty([[f"{path}:2", 90, 30, 0.0003, ["pow"], None]]) is None
