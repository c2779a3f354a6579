"""A Python loop over a tensor's rows, one at a time, where the gaps between the steps go
(analysis/row_loops.py): knn_eval's shape (an evaluation with no model.eval(), no DataLoader:
`for i in range(len(Xv)): q = enc(Xv[i:i + 1])`, 0.53 s a pass, 0.03 s with the same ops on all
rows at once). A loop over batches (a step of 128), or one that feeds no row to a call, is not it."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.gaps import gaps_row_loop
from gpubottle.analysis.row_loops import row_loop, row_loop_at
from gpubottle.analysis.stacks import Frame, ThreadSamples

SCRIPT = """import torch


def knn_accuracy():
    with torch.no_grad():
        bank = enc(X)
        correct = 0
        for i in range(len(Xv)):
            q = enc(Xv[i:i + 1])
            d = torch.cdist(q, bank)[0]
            correct += int(Y[d.argmin()] == Yv[i])
    return correct


def batched():
    for b in range(0, len(X), 128):
        out = enc(X[b:b + 128])
    for i, x in enumerate(rows):
        total = score(x, labels[i])
    for i in range(10):
        print(i)
"""


def _stacks(path: str, lines: list[int], function: str = "knn_accuracy") -> list[list[Frame]]:
    return [[Frame("<module>", path, 30), Frame(function, path, line)] for line in lines]


def test_a_loop_feeding_one_row_a_call_is_found_at_its_header(tmp_path: Path) -> None:
    path = str(tmp_path / "knn.py")
    Path(path).write_text(SCRIPT)
    for line in (9, 10, 11):
        assert row_loop_at(path, line) == (8, "for i in range(len(Xv)):")
    assert row_loop_at(path, 6) is None  # before the loop: the bank, all rows at once
    assert row_loop_at(path, 17) is None  # batches of 128
    assert row_loop_at(path, 19) == (18, "for i, x in enumerate(rows):")  # labels[i] into a call
    assert row_loop_at(path, 21) is None  # print(i): no row taken
    assert row_loop_at(str(tmp_path / "gone.py"), 9) is None


def test_most_of_the_gaps_samples_in_the_loop_name_it_with_their_share(tmp_path: Path) -> None:
    path = str(tmp_path / "knn.py")
    Path(path).write_text(SCRIPT)
    found = row_loop(_stacks(path, [9] * 6 + [10] * 3 + [6]), "knn_accuracy")
    assert found is not None and found.site.endswith("knn.py:8") and found.share == 0.9
    assert found.text == "for i in range(len(Xv)):"
    assert row_loop(_stacks(path, [9] * 4 + [6] * 6), "knn_accuracy") is None  # under half
    assert row_loop(_stacks(path, [9] * 6), "other") is None  # not the gaps' function
    # through the gaps' spans, timed as the main thread's samples are
    main = ThreadSamples(1, _stacks(path, [9] * 8), times=[float(t) for t in range(8)])
    assert gaps_row_loop(main, [(1.0, 6.0)], "knn_accuracy") is not None
    assert gaps_row_loop(main, [(1.0, 6.0)], "knn_accuracy: parsing JSON (json.loads)") is None
    assert gaps_row_loop(main, [(20.0, 30.0)], "knn_accuracy") is None


ITEMS = """import torch


def score(model, records):
    out = []
    for r in records:
        out.append(torch.sigmoid(model(r.unsqueeze(0))).item())
    for r in records:
        out.append(model(r[None, :]))
    for r in records:
        out.append(model(r.view(1, -1)))
    for r in records:
        out.append(len(r))
    for path in paths:
        out.append(load(path))
    return out
"""


def test_a_tensors_rows_iterated_and_fed_as_batches_of_one_are_a_row_loop(tmp_path: Path) -> None:
    """infer_single's shape: `for r in records: model(r.unsqueeze(0))`, 100,000 calls of one row
    (4.9 s; 1.5 s 256 rows a call): iterating a tensor gives its rows, and the batch of one says so."""
    path = str(tmp_path / "score.py")
    Path(path).write_text(ITEMS)
    assert row_loop_at(path, 7) == (6, "for r in records:")
    assert row_loop_at(path, 9) == (8, "for r in records:")
    assert row_loop_at(path, 11) == (10, "for r in records:")
    assert row_loop_at(path, 13) is None  # no batch of one
    assert row_loop_at(path, 15) is None  # a path a call: not rows


TOP = """import torch

for epoch in range(3):
    train_step()
correct = 0
for i in range(len(Xt)):
    pred = model(Xt[i:i + 1]).argmax(1)
    correct += int(pred.item() == Yt[i].item())
"""


def test_a_loop_at_the_scripts_top_level_is_found_at_its_module_frame(tmp_path: Path) -> None:
    """final_eval's shape: the work after the last step named by a statement's text, not a function:
    the loop is looked for at the script's `<module>` frame (not in a model's forward beneath)."""
    path = str(tmp_path / "final.py")
    Path(path).write_text(TOP)
    stacks = [[Frame("<module>", path, 7), Frame("Net.forward", path, 2)]] * 4
    found = row_loop(stacks, None)
    assert found is not None and found.site.endswith("final.py:6") and found.share == 1.0
    main = ThreadSamples(1, [list(st) for st in stacks], times=[1.0, 2.0, 3.0, 4.0])
    found = gaps_row_loop(main, [(0.0, 5.0)], "pred = model(Xt[i:i + 1]).argmax(1)")
    assert found is not None and found.text == "for i in range(len(Xt)):"


def test_a_statement_calling_a_method_of_a_row_names_its_loop(tmp_path: Path) -> None:
    """topk_by_row.py's shape: a top-5 accuracy sample by sample in the training loop, named by
    its statement (`if y[k] in out[k].topk(5).indices:`); a method of a row is a call on it."""
    from gpubottle.analysis.row_loops import row_loop_named
    from gpubottle.probes.sites import place

    path = str(tmp_path / "top5.py")
    Path(path).write_text("for step in range(10):\n"
                          "    out = model(x)\n"
                          "    for k in range(len(y)):\n"
                          "        if y[k] in out[k].topk(5).indices:\n"
                          "            correct += 1\n"
                          "    for k in range(3):\n"
                          "        total += out.sum()\n")
    assert row_loop_at(path, 4) == (3, "for k in range(len(y)):")
    assert row_loop_at(path, 7) is None  # no row taken
    stacks = [[Frame("<module>", path, 4)]] * 3
    found = row_loop_named(stacks, "if y[k] in out[k].topk(5).indices:", place(path, 4))
    assert found is not None and found.site.endswith("top5.py:3") and found.text == "for k in range(len(y)):"
    assert row_loop_named([[Frame("<module>", path, 7)]], "total += out.sum()", place(path, 7)) is None


def test_rows_computed_with_or_written_one_at_a_time_are_a_row_loop(tmp_path: Path) -> None:
    """A mixup row by row (`xm[k] = lam * x[k] + (1 - lam) * x[perm[k]]`: 5.6 s -> 4.4 s as
    `lam * x + (1 - lam) * x[perm]`) and a loss over pairs (`(z[a] - z[b]).pow(2).sum()` in two
    loops: 10.3 s -> 2.3 s all pairs at once): the innermost loop whose rows they take."""
    path = str(tmp_path / "rows.py")
    Path(path).write_text("for k in range(128):\n"
                          "    xm[k] = lam * x[k] + (1 - lam) * x[perm[k]]\n"
                          "for a in range(len(z)):\n"
                          "    for b in range(len(z)):\n"
                          "        d = (z[a] - z[b]).pow(2).sum()\n"
                          "for k in range(4):\n"
                          "    total = total + 1\n")
    assert row_loop_at(path, 2) == (1, "for k in range(128):")
    assert row_loop_at(path, 5) == (4, "for b in range(len(z)):")
    assert row_loop_at(path, 7) is None


_STEP = """import torch.nn.functional as F


for step in range(200):
    logits = model(X[idx])
    loss = 0.0
    for c in range(C):
        loss = loss + F.binary_cross_entropy_with_logits(logits[:, c], y[:, c], pos_weight=w[c])
    for i in range(len(y)):
        top = logits[i].topk(5)
    for j in range(C):
        n = grid[j, 0]
    loss.backward()
    opt.step()
for i in range(N):
    loss = F.mse_loss(model(X[i]), Y[i])
    loss.backward()
"""


def test_a_loss_summed_a_column_at_a_time_is_an_inner_row_loop_of_columns(tmp_path: Path) -> None:
    """A weighted loss a class at a time inside the step (class_weighted_loop.py: 200 classes, the
    training 2.2 s -> ~0.3 s as one call): `logits[:, c]` takes a column by the loop's index; the
    step loop itself (it calls backward) and `grid[j, 0]` (one element) are not such loops."""
    from gpubottle.analysis.row_loops import inner_row_loop, takes_columns

    path = str(tmp_path / "step.py")
    Path(path).write_text(_STEP)
    assert row_loop_at(path, 8) == (7, "for c in range(C):")
    assert inner_row_loop(path, 8) and takes_columns(path, 7)
    assert inner_row_loop(path, 10) and not takes_columns(path, 9)  # rows: logits[i]
    assert row_loop_at(path, 12) is None  # grid[j, 0]: an element, not a column
    assert not inner_row_loop(path, 16)  # per-sample training: the loop holds backward()
    assert not inner_row_loop(path, 5)  # the step loop's own line: no row loop around it


def test_pairs_drawn_by_itertools_over_ranges_index_rows(tmp_path: Path) -> None:
    """A ranking loss over every pair of a query's documents (pairwise_ranking.py: `for i, j in
    itertools.combinations(range(24), 2): loss = loss + torch.relu(1 - sign * (s[i] - s[j]))`, the
    run 4.6 s -> 2.0 s with every pair's difference at once): both names index rows, a row loop;
    product(range(n), range(m)) too. Pairs of anything but ranges (a list's items), or a pair
    loop taking no rows, are not."""
    from gpubottle.analysis.row_loops import inner_row_loop

    path = tmp_path / "rank.py"
    path.write_text("import itertools\nfrom itertools import product\n"
                    "for step in range(10):\n"
                    "    for i, j in itertools.combinations(range(24), 2):\n"
                    "        loss = loss + torch.relu(1.0 - (s[i] - s[j]))\n"
                    "    for a, b in product(range(4), range(5)):\n"
                    "        d = d + (z[a] * w[b]).sum()\n"
                    "    for u, v in itertools.combinations(names, 2):\n"
                    "        e = e + (s[u] - s[v])\n"
                    "    for i, j in itertools.combinations(range(24), 2):\n"
                    "        n = n + i * j\n"
                    "    loss.backward()\n")
    assert row_loop_at(str(path), 5) == (4, "for i, j in itertools.combinations(range(24), 2):")
    assert row_loop_at(str(path), 7) == (6, "for a, b in product(range(4), range(5)):")
    assert row_loop_at(str(path), 9) is None and row_loop_at(str(path), 11) is None
    assert inner_row_loop(str(path), 5)  # (inside the step's loop, no backward in its body)


def test_a_row_loops_other_statements_count_with_the_one_it_is_named_at() -> None:
    """pairwise_ranking.py as py-spy sampled it: its loss line 42% of the step, named at its pair
    loop, and the loop's `if rel[q, i] == rel[q, j]: continue` 15% said apart ("also outside the
    model"): one loop, one share. A statement outside the loop stays apart."""
    from conftest import SCRIPTS

    from gpubottle.analysis.stack_users import _fold_loop, stack_evidence
    from gpubottle.evidence import StackFrameShare

    script = str(SCRIPTS / "real_code" / "pairwise_ranking.py")
    runpy = Frame("_run_code", "<frozen runpy>", 88)
    at = [[runpy, Frame("<module>", script, line)] for line in (30, 27)]
    forward = [runpy, Frame("<module>", script, 24),
               Frame("Module._wrapped_call_impl", "/venv/site-packages/torch/nn/modules/module.py", 1778)]
    stacks = [at[0]] * 42 + [at[1]] * 15 + [forward] * 43
    ev = stack_evidence({1: ThreadSamples(1, stacks)}, 1, set(), None)
    (top,) = ev.main_outside_model
    assert top.row_loop is not None and top.row_loop.endswith("pairwise_ranking.py:26")
    assert top.share == 0.57, top
    # (a statement before the loop, `q = torch.randint(0, Q, (1,)).item()`, is not the loop's)
    before = StackFrameShare("q = torch.randint(0, Q, (1,)).item()", f"{script}:23", 0.2)
    stacks += [[runpy, Frame("<module>", script, 23)]] * 20
    assert _fold_loop(stacks, StackFrameShare("x", "y", 0.1, row_loop=top.row_loop), [before]) == [before]
