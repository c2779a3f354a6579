"""compute-bound where the model steps an LSTMCell 64 times a step over a sequence made before the
loop, from made-up evidence shaped like a measured run (a char-level LSTM of 128, batch 32: the
cell's forwards 24% of a 46-ms step, which read compute-bound with torch.compile only; as nn.LSTM
16 ms a step): the whole-sequence module leads, said in the script's names, and not where the loop
is a small part or its input comes from the loop's own work."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import CellLoop, ModelCallCount
from gpubottle.rules import diagnose
from gpubottle.rules.thresholds import CELL_LOOP_FORWARD_SHARE


def _finding(*cells: CellLoop):
    ev = evidence(steps=110, step_s=0.046, main=1.0, cores=2.0)
    ev.model_calls = ModelCallCount("CharRNN", "rnn.py:32", 1, 32, ["model"], cells=list(cells))
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    return f


def _cell(**kw: object) -> CellLoop:
    args: dict[str, object] = dict(cell="LSTMCell", name="self.cell", site="rnn.py:22", calls=64,
                                   input_size=128, hidden_size=128, forward_share=0.24, sequence="e", axis=1)
    args.update(kw)
    return CellLoop(**args)  # type: ignore[arg-type]


def test_the_whole_sequence_module_leads_in_the_scripts_names() -> None:
    f = _finding(_cell())
    assert f.summary.endswith("and it steps LSTMCell self.cell 64 times a step in a Python loop"), f.summary
    first = f.fixes[0]
    assert first.text.startswith("the loop at rnn.py:22 calls LSTMCell self.cell 64 times a step, once per "
                                 "position of e, which is made before the loop: nn.LSTM(128, 128, "
                                 "batch_first=True) computes the whole sequence in one call"), first.text
    assert "out, (h, c) = self.lstm(e)" in first.text and "weight_ih_l0" in first.text
    assert "24% of a step here" in first.text and "try it and time it" in first.text
    assert first.where == "rnn.py:22" and not first.change and first.expected is None
    assert "torch.compile" in f.fixes[1].text


def test_a_gru_walked_on_its_first_axis_is_said_as_nn_gru() -> None:
    first = _finding(_cell(cell="GRUCell", name="gru", axis=0, sequence="x")).fixes[0]
    assert "nn.GRU(128, 128) computes" in first.text and "out, h = gru(x)" in first.text


def test_not_said_for_a_small_share_a_decoder_or_a_cell_of_the_scripts_own() -> None:
    for cell in (_cell(forward_share=CELL_LOOP_FORWARD_SHARE / 2), _cell(forward_share=None),
                 _cell(sequence=None, axis=None), _cell(cell="MyCell")):
        f = _finding(cell)
        assert not any("computes the whole sequence" in x.text for x in f.fixes), cell
        assert "Python loop" not in f.summary


def test_a_cell_stepped_on_rows_of_a_time_major_input_keeps_its_own_fix() -> None:
    """`for t in range(T): h = self.cell(x[t], h)`: x[t] reads as a row to the forward's row-loop
    finding (analysis/forward_rows.py); nn.LSTM is the cure, not index_add_ over rows."""
    from gpubottle.evidence import StackEvidence, StackFrameShare

    ev = evidence(steps=110, step_s=0.046, main=1.0, cores=2.0)
    ev.model_calls = ModelCallCount("CharRNN", "rnn.py:32", 1, 32, ["model"], cells=[_cell(axis=0)])
    phases = {"forward": 0.5, "backward": 0.4, "optimizer": 0.1}
    loop = StackFrameShare("CharRNN.forward", "rnn.py:21", 0.4, row_loop="rnn.py:21",
                           row_loop_text="for t in range(T):")
    ev.stacks = StackEvidence(samples_main=100, main_phases=phases, main_forward_loop=loop)
    [f] = [f for f in diagnose(ev).findings if f.category == v.COMPUTE_BOUND]
    assert "computes the whole sequence" in f.fixes[0].text, f.fixes[0].text
    assert not any("index_add_" in x.text for x in f.fixes)
