"""nn.MultiheadAttention asked for the weights its calling line drops (analysis/attention_weights.py):
the line is read from the main thread's samples inside the attention's forward, its statement from
the source; torch's own TransformerEncoderLayer (need_weights=False already) and a line that uses
the weights or passes need_weights are not."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.attention_weights import dropped_attention_weights, drops_weights
from gpubottle.analysis.stacks import Frame

SOURCE = """import torch


class Block(torch.nn.Module):
    def forward(self, x):
        a, _ = self.attn(x, x, x)
        b, w = self.attn(x, x, x)
        c, unused = self.attn(x, x, x)
        d = self.attn(x, x, x)[0]
        e, _w = self.attn(x, x, x, need_weights=False)
        f, g = self.attn(x, x, x,
                         key_padding_mask=None)
        return a + b + c + d + e + f + w.sum() + g.sum()
"""
TORCH = "/venv/lib/python3.11/site-packages/torch"
MODULE = [Frame("Module._wrapped_call_impl", f"{TORCH}/nn/modules/module.py", 1778),
          Frame("Module._call_impl", f"{TORCH}/nn/modules/module.py", 1789)]
ATTENTION = [*MODULE, Frame("MultiheadAttention.forward", f"{TORCH}/nn/modules/activation.py", 1488),
             Frame("multi_head_attention_forward", f"{TORCH}/nn/functional.py", 7035)]


def _write(tmp_path: Path) -> str:
    path = tmp_path / "model.py"
    path.write_text(SOURCE)
    return str(path)


def test_a_line_that_drops_the_weights_is_told_from_one_that_keeps_or_declines_them(tmp_path: Path) -> None:
    path = _write(tmp_path)
    assert [drops_weights(path, n) for n in range(6, 13)] == [
        True,  # a, _ = ...
        False,  # b, w: w is read below
        True,  # c, unused: never read
        True,  # [0]
        False,  # need_weights=False already
        False, False]  # g is read (a call over two lines, from either)
    assert not drops_weights(str(tmp_path / "missing.py"), 6)


def test_the_most_sampled_dropping_call_is_named_with_its_share(tmp_path: Path) -> None:
    path = _write(tmp_path)
    top = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", path, 20)]
    dropped = [*top, *MODULE, Frame("Block.forward", path, 6), *ATTENTION]
    kept = [*top, *MODULE, Frame("Block.forward", path, 7), *ATTENTION]
    other = [*top, *MODULE, Frame("Block.forward", path, 13)]
    found = dropped_attention_weights([dropped] * 3 + [kept] * 4 + [other] * 3)
    assert found is not None and found.location.endswith("model.py:6") and found.share == 0.3, found
    assert dropped_attention_weights([kept] * 4 + [other]) is None


def test_torchs_own_encoder_layer_calling_the_attention_is_not_the_scripts_call(tmp_path: Path) -> None:
    path = _write(tmp_path)
    layer = Frame("TransformerEncoderLayer._sa_block", f"{TORCH}/nn/modules/transformer.py", 950)
    st = [Frame("_run_code", "<frozen runpy>", 88), Frame("Block.forward", path, 6), *MODULE, layer,
          *ATTENTION]
    assert dropped_attention_weights([st] * 5) is None
