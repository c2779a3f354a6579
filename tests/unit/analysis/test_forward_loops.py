"""An RNN cell stepped in a Python loop: whether each call takes the next position of a sequence
made before the loop (then nn.LSTM over the sequence is the same math in one call), read from the
calling line's source: by index on either axis, through a name, or walking an unbind; never where
the input comes from the loop's own work (a decoder feeding back its prediction)."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.forward_loops import cell_loops, sequence_input

SCRIPT = """import torch


class Nets(torch.nn.Module):
    def batch_first(self, e, h, c):
        for t in range(e.size(1)):
            h, c = self.cell(e[:, t], (h, c))
        return h

    def time_major(self, x, h):
        for t in range(len(x)):
            x_t = x[t]
            h = self.gru(x_t, h)
        return h

    def walked(self, x, h):
        outs = []
        for x_t in x.unbind(1):
            h = self.rnn(x_t, h)
            outs.append(h)
        return outs

    def decoder(self, prev, h, c):
        for t in range(10):
            inp = self.emb(prev)
            h, c = self.cell(inp, (h, c))
            prev = self.out(h).argmax(-1)
        return h

    def changed(self, e, h, c):
        for t in range(e.size(1)):
            h, c = self.cell(e[:, t], (h, c))
            e = e * 0.5
        return h
"""


def test_the_sequence_each_call_takes_a_position_of_is_read_with_its_axis(tmp_path: Path) -> None:
    path = str(tmp_path / "nets.py")
    Path(path).write_text(SCRIPT)
    assert sequence_input(path, 7, "self.cell") == ("e", 1)
    assert sequence_input(path, 13, "self.gru") == ("x", 0)  # through the name x_t = x[t]
    assert sequence_input(path, 19, "self.rnn") == ("x", 1)  # for x_t in x.unbind(1)


def test_an_input_made_by_the_loops_own_work_is_no_sequence(tmp_path: Path) -> None:
    path = str(tmp_path / "nets.py")
    Path(path).write_text(SCRIPT)
    assert sequence_input(path, 26, "self.cell") is None  # the decoder's previous prediction
    assert sequence_input(path, 32, "self.cell") is None  # the sequence changes in the loop
    assert sequence_input(path, 7, "self.gru") is None  # no call of that name on the line
    assert sequence_input(path, 2, "self.cell") is None  # no loop
    assert sequence_input(str(tmp_path / "gone.py"), 7, "self.cell") is None


def test_the_probes_records_become_evidence_with_the_forwards_share(tmp_path: Path) -> None:
    path = tmp_path / "nets.py"
    path.write_text(SCRIPT)
    [loop, decoder] = cell_loops([["LSTMCell", "self.cell", f"{path}:7", 64, 128, 256, 0.012, 0.048],
                                  ["LSTMCell", "self.cell", f"{path}:26", 10, 32, 32, 0.001, 0.0]])
    assert (loop.sequence, loop.axis, loop.forward_share, loop.calls) == ("e", 1, 0.25, 64)
    assert (decoder.sequence, decoder.forward_share) == (None, None)
    # Of the measured steps' median where known: the counted step's clock holds its hooks and,
    # beside busy programs, a wait for a core (0.087 read so where 0.21-0.23 quiet)
    [loop] = cell_loops([["LSTMCell", "self.cell", f"{path}:7", 64, 128, 256, 0.012, 0.138]], 0.03)
    assert loop.forward_share == 0.4


def test_a_module_called_once_per_sample_of_the_batch_is_told_by_its_shapes() -> None:
    from gpubottle.analysis.forward_loops import per_sample_inner

    rec = ["Sequential", "self.enc", "enc.py:16", 64, [16, 64], [64, 16, 64]]
    [p] = per_sample_inner([rec], outer_calls=1)
    assert (p.name, p.calls, p.sample_shape, p.batch_shape) == ("self.enc", 64, [16, 64], [64, 16, 64])
    assert per_sample_inner([[*rec[:4], [1, 16, 64], rec[5]]], 1)  # x[i:i+1]
    assert per_sample_inner([[*rec[:3], 128, *rec[4:]]], 2)  # two forwards a step, 64 calls each
    # Not per sample: a module shared over 64 heads or positions of one batch-shaped input, a
    # call count that is not the batch's, or no shapes known.
    assert not per_sample_inner([[*rec[:4], [64, 16, 64], rec[5]]], 1)
    assert not per_sample_inner([[*rec[:3], 16, *rec[4:]]], 1)
    assert not per_sample_inner([[*rec[:4], None, rec[5]]], 1)
    assert not per_sample_inner([[*rec[:5], [1, 64]]], 1)


def test_the_line_building_a_layer_called_in_forward_is_read_from_its_source(tmp_path) -> None:
    """model_calls' row for a module built in the step names the line that calls it; the line that
    builds it is the last call of its class above, in the same function."""
    import linecache

    from gpubottle.analysis.forward_loops import built_at, untrained

    path = tmp_path / "net.py"
    path.write_text("import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
                    "    def forward(self, x):\n        h = self.body(x)\n"
                    "        head = nn.Linear(\n            64, 10)\n        return head(h)\n")
    linecache.checkcache(str(path))
    assert built_at(f"{path}:10", "Linear") == (f"{path}:8", "head = nn.Linear(64, 10)")
    assert built_at(f"{path}:10", "Conv2d") is None
    u = untrained(["Linear", f"{path}:10", 650, 4000, 1, 1, 1])
    assert (u.built, u.built_at, u.built_code) == (True, f"{path}:8", "head = nn.Linear(64, 10)")
    old = untrained(["teacher", f"{path}:10", 650, 4000, 1, 0])  # (a record before `built`)
    assert (old.built, old.built_at, old.input_grad) == (False, None, False)


def test_the_attribute_holding_unregistered_layers_is_found_where_it_is_assigned(tmp_path) -> None:
    import linecache

    from gpubottle.analysis.forward_loops import held_at, untrained

    path = tmp_path / "net.py"
    path.write_text("from torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
                    "        super().__init__()\n"
                    "        self.hidden = [nn.Linear(8, 8) for _ in range(3)]\n\n"
                    "    def forward(self, h):\n        for layer in self.hidden:\n            h = layer(h)\n"
                    "        return h\n")
    linecache.checkcache(str(path))
    assert held_at(f"{path}:11", "Net.hidden (a plain list)") == f"{path}:7"
    assert held_at(f"{path}:11", None) is None
    u = untrained(["Linear", f"{path}:11", 216, 1000, 1, 1, 0, 1, 3, "Net.hidden (a plain list)"])
    assert (u.unregistered, u.modules, u.held_at, u.built) == (True, 3, f"{path}:7", False)
