"""Whether a helper's result feeds the model, read from the loop's own lines (analysis/loop_source.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpubottle.analysis.loop_source import accumulates, assigned_names, flows_into, loop_index, names_read

LOOP = '''for step, (x, y) in enumerate(loader):
    x, y = mix_rows(x, y, rng)
    batch: dict = prepare(batch)
    acc = accuracy(x, y)
    out = model(x)
    tracker.log(step, acc)
    loss = criterion(out,
                     y)
    loss = criterion(out, y)
    total += score(out)
    loss.backward()
print("done")
feats = embed(x)
'''


def feeds_model(call: tuple[str, int], model_calls: set[tuple[str, int]]) -> bool:
    """The step trains on what the helper returns: the model's input or its loss."""
    return flows_into(call, model_calls) is not None


def _loop(tmp_path: Path) -> str:
    path = tmp_path / "train.py"
    path.write_text(LOOP)
    return str(path)


def test_the_names_a_line_assigns_and_reads(tmp_path: Path):
    f = _loop(tmp_path)
    assert assigned_names(f, 2) == {"x", "y"}
    assert assigned_names(f, 3) == {"batch"}  # annotated
    assert assigned_names(f, 10) == {"total"}  # augmented
    assert assigned_names(f, 6) == set()  # a call whose result is dropped
    assert names_read(f, 9) >= {"criterion", "out", "y"}
    # A statement over several lines: read whole from the file's parse, from any of its lines.
    assert names_read(f, 7) >= {"criterion", "out", "y"} and assigned_names(f, 8) == {"loss"}
    assert assigned_names(f, 1) == set()  # a loop's own line: no statement of its body
    assert assigned_names(f, 99) == set()  # past the end


def test_each_statement_of_a_line_is_read(tmp_path: Path):
    """`x = encode(texts[i:i + 64]); y = torch.tensor(...)` then `model(x)`: encode makes the batch
    (it was offered "call it every 10 steps" where the line did not parse as one statement)."""
    path = tmp_path / "train.py"
    path.write_text("for i in range(0, n, 64):\n"
                    "    x = encode(texts[i:i + 64]); y = torch.tensor(labels[i:i + 64])\n"
                    "    loss = F.cross_entropy(model(x), y)\n"
                    "    try:\n"
                    "        pass\n"
                    "    except ValueError:\n"
                    "        z = fix(x)\n"
                    "    loss.backward()\n")
    f = str(path)
    assert assigned_names(f, 2) == {"x", "y"} and names_read(f, 2) >= {"encode", "texts", "labels"}
    assert feeds_model((f, 2), {(f, 3)})
    assert assigned_names(f, 7) == {"z"}  # inside an except clause
    # A file that does not parse (a notebook cell's export, a fragment): each line alone, as before
    broken = tmp_path / "fragment.py"
    broken.write_text("x = encode(t); y = g(t)\nfor i in range(:\n")
    assert assigned_names(str(broken), 1) == {"x", "y"}


def test_a_helper_feeds_the_model_when_what_it_returns_reaches_the_model_or_backward(tmp_path: Path):
    f = _loop(tmp_path)
    # x, y = mix_rows(...) -> out = model(x) -> loss = criterion(out, y) -> loss.backward()
    assert feeds_model((f, 2), set())
    assert feeds_model((f, 2), {(f, 5)})  # ...or straight into a model call the stacks saw
    assert not feeds_model((f, 4), set())  # acc = accuracy(...): only logged
    assert not feeds_model((f, 6), set())  # tracker.log(...): nothing assigned
    assert not feeds_model((f, 3), set())  # batch: read by nothing below
    # Past the loop's body (back at module level) nothing is followed.
    assert not feeds_model((f, 13), set())


def test_a_helper_that_computes_the_loss_from_the_models_output_flows_into_backward(tmp_path: Path):
    """flows_into tells the model's input (x = aug(x); out = model(x)) from the loss written by hand
    (loss = weighted_loss(model(x), y); loss.backward()): the second must run every step, on the
    main process, and cannot move into the DataLoader's workers. On a line that also calls the
    model, the parentheses say which: model(aug(x)) is its input."""
    from gpubottle.analysis.loop_source import BACKWARD, MODEL, flows_into

    path = tmp_path / "train.py"
    path.write_text("for x, y in loader:\n"
                    "    x = aug(x)\n"
                    "    loss = weighted_loss(model(x), y)\n"
                    "    out = model(jitter(x))\n"
                    "    loss.backward()\n")
    models = [(str(path), 3), (str(path), 4)]
    assert flows_into((str(path), 2), models, helper="aug") == MODEL
    assert flows_into((str(path), 3), models, helper="weighted_loss") == BACKWARD
    assert flows_into((str(path), 4), models, helper="jitter") == MODEL
    # The model's line not among those the stacks caught (a tiny forward, few samples): x went
    # through a call's arguments on its way to backward(), so it is still the model's input.
    assert flows_into((str(path), 2), [], helper="aug") == MODEL
    assert flows_into((str(path), 3), [], helper="weighted_loss") == BACKWARD


def test_an_evaluation_written_inline_in_the_loop_is_told_from_a_helper(tmp_path):
    """model.eval() in the function that also calls backward(): the loop's own code (main() and
    the line calling main() say nothing of it); in a helper the loop calls: that helper."""
    from gpubottle.analysis.loop_source import trains_beside

    path = tmp_path / "train.py"
    path.write_text(
        "def evaluate(model, x):\n"          # 1
        "    model.eval()\n"                  # 2
        "    out = model(x)\n"                # 3
        "    model.train()\n"                 # 4
        "    return out\n"                    # 5
        "\n"                                  # 6
        "def main(model, opt, x):\n"          # 7
        "    for _ in range(10):\n"           # 8
        "        model(x).sum().backward()\n"  # 9
        "        opt.step()\n"                # 10
        "        model.eval()\n"              # 11
        "        model.train()\n"             # 12
        "        evaluate(model, x)\n")       # 13
    assert trains_beside(str(path), 11)
    assert not trains_beside(str(path), 2)
    assert not trains_beside(str(tmp_path / "missing.py"), 3)


def test_a_running_total_or_list_is_told_from_a_value_used_once(tmp_path: Path) -> None:
    path = tmp_path / "acc.py"
    path.write_text("correct = 0\npreds = []\nfor x, y in loader:\n"
                    "    correct += sum(1 for p, t in zip(x, y) if p == t)\n"
                    "    preds.append(model(x).argmax(1))\n"
                    "    acc = accuracy(x, y)\n"
                    "    log(acc)\n")
    assert accumulates(str(path), 4) and accumulates(str(path), 5)
    assert not accumulates(str(path), 6) and not accumulates(str(path), 7)


AGENT = '''for episode in range(400):
    s, done = env.reset(), False
    while not done:
        logits = policy(torch.tensor(s))
        dist = Categorical(logits=logits)
        a = dist.sample()
        obs = torch.tensor(s)
        s, r, done = env.step(a.item())
    x = augment(batch)
'''


def test_what_reads_the_models_output_this_step_is_told_from_what_could_be_made_ahead(tmp_path: Path):
    """An agent's action sampled from its policy's logits, and the environment's step on it, read
    the model's output through the loop's assignments; a tensor made from the state before the call
    does not (nor code after the call's block ends)."""
    from gpubottle.analysis.loop_source import reads_model_output

    path = str(tmp_path / "rl.py")
    Path(path).write_text(AGENT)
    calls = {(path, 4)}
    assert reads_model_output((path, 5), calls) and reads_model_output((path, 6), calls)
    assert reads_model_output((path, 8), calls)  # env.step(a.item())
    assert not reads_model_output((path, 7), calls)  # torch.tensor(s): the state, not the output
    assert not reads_model_output((path, 9), calls)  # out of the while block
    assert not reads_model_output((path, 4), calls) and not reads_model_output((path, 6), set())


def test_a_model_whose_input_comes_back_from_its_output_feeds_back(tmp_path: Path):
    """The agent's policy (its next state from acting on its sample) feeds back; a model called on
    each sample of a batch (the input from the data, its output only to the loss) does not."""
    from gpubottle.analysis.loop_source import feeds_back

    path = str(tmp_path / "rl.py")
    Path(path).write_text(AGENT)
    assert feeds_back((path, 4))
    per_sample = tmp_path / "loop.py"
    per_sample.write_text("""for xb, yb in loader:
    losses = []
    for i in range(len(xb)):
        out = model(xb[i].unsqueeze(0))
        losses.append(crit(out, yb[i:i + 1]))
    loss = torch.stack(losses).mean()
""")
    assert not feeds_back((str(per_sample), 4))
    assert not feeds_back((str(per_sample), 1)) and not feeds_back((str(tmp_path / "gone.py"), 4))


@pytest.mark.parametrize(("header", "any_step", "unit_step"), [
    ("for i in range(n):", "i", "i"),
    ("for i in range(1, n):", "i", "i"),
    ("for i in range(0, n, 64):", "i", None),  # batches of 64 rows, not one row at a time
    ("for i, x in enumerate(xs):", "i", "i"),
    ("for i, x in enumerate(xs, start=1):", "i", None),
    ("for x in xs:", None, None),
    ("for (i, j) in range(n):", None, None),
    ("for i in torch.arange(n):", None, None),
])
def test_a_loops_index_with_and_without_a_step(header: str, any_step: str | None, unit_step: str | None):
    loop = ast.parse(f"{header}\n    pass\n").body[0]
    assert isinstance(loop, ast.For)
    assert loop_index(loop) == any_step and loop_index(loop, unit_step=True) == unit_step
