"""Convolutions and their memory format (analysis/memory_format.py): the share of samples inside a
Conv2d's forward, and the script's own line asking for channels_last (not a docstring or comment
that names it)."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.memory_format import channels_last_site, conv2d_share
from gpubottle.analysis.stacks import Frame
from gpubottle.rules.compute.words import faster_math

TORCH = "/venv/lib/python3.11/site-packages/torch"


def test_the_conv2d_share_counts_samples_inside_its_forward() -> None:
    top = [Frame("<module>", "train.py", 30),
           Frame("Module._call_impl", f"{TORCH}/nn/modules/module.py", 1789)]
    conv = [*top, Frame("Conv2d._conv_forward", f"{TORCH}/nn/modules/conv.py", 548)]
    conv1d = [*top, Frame("Conv1d._conv_forward", f"{TORCH}/nn/modules/conv.py", 370)]
    norm = [*top, Frame("batch_norm", f"{TORCH}/nn/functional.py", 2817)]
    assert conv2d_share([conv] * 3 + [conv1d] * 2 + [norm] * 5) == 0.3
    assert conv2d_share([]) is None


def test_channels_last_is_found_in_code_not_in_what_the_script_says_of_it(tmp_path: Path) -> None:
    (tmp_path / "said.py").write_text('"""Faster in channels_last."""\n# try channels_last\nx = 1\n')
    (tmp_path / "used.py").write_text('import torch\n\nmodel = model.to(memory_format=torch.channels_last)\n')
    assert channels_last_site(["said.py"], str(tmp_path)) is None
    assert channels_last_site(["said.py", "used.py"], str(tmp_path)) == "used.py:3"
    assert channels_last_site([None, "missing.py", "cell [2]"], str(tmp_path)) is None


def test_a_conv_net_is_offered_channels_last_first_with_its_models_name() -> None:
    text = faster_math(True, names=["net"], conv2d=True)
    assert text.startswith("run the math faster: the convolutions in channels_last: net = "
                           "net.to(memory_format=torch.channels_last)"), text
    assert "channels_last" not in faster_math(True, names=["net"])
