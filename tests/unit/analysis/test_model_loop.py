"""Where a script calls its model without training steps, and whether the loop around the call
grows the input it passes (analysis/model_loop.py)."""

from __future__ import annotations

from gpubottle.analysis.model_loop import grown_input, model_call_site, model_loop
from gpubottle.analysis.stacks import Frame

TORCH = "/venv/lib/python3.11/site-packages/torch"


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "gen.py"
    path.write_text(text)
    return str(path)


def test_a_sequence_the_loop_concatenates_onto_is_the_grown_input(tmp_path):
    path = _write(tmp_path, "import torch\n"
                            "seq = torch.zeros(1, 4, dtype=torch.long)\n"
                            "for t in range(8):\n"
                            "    logits = model(seq)\n"
                            "    nxt = logits[:, -1].argmax(-1, keepdim=True)\n"
                            "    seq = torch.cat([seq, nxt], dim=1)\n"
                            "for t in range(8):\n"
                            "    out = model(x)\n"
                            "    y = torch.cat([y, out])\n")
    assert grown_input(path, 4) == 6
    assert grown_input(path, 8) is None  # it grows what it returns, not what it passes
    stacks = [[Frame("<module>", path, 4), Frame("Module._wrapped_call_impl", f"{TORCH}/nn/modules/module.py",
                                                  1778), Frame("Net.forward", path, 2)]] * 3
    assert model_call_site(stacks) == (path, 4)
    call, grows = model_loop(stacks)
    assert call is not None and call.endswith("gen.py:4") and grows is not None and grows.endswith("gen.py:6")


def test_no_module_call_on_the_stacks_is_no_site(tmp_path):
    path = _write(tmp_path, "x = 1\n")
    assert model_call_site([[Frame("<module>", path, 1)]]) is None
    assert model_loop([[Frame("<module>", path, 1)]]) == (None, None)
