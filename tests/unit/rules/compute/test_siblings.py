"""rules/compute/siblings.py: convolutions each on a slice of the channels are said as one grouped
convolution, Linear heads on the same input as one wider Linear, other alike modules on the same
input as one vmapped call; experts each on their own rows, or modules not alike, are not said."""

from __future__ import annotations

from gpubottle.evidence import SiblingModules
from gpubottle.rules.compute.siblings import said, sibling_fix


def _s(module: str, shape: list[int], same: bool, alike: bool = True, one_storage: bool = True,
       **config: object) -> SiblingModules:
    return SiblingModules(module, "m", "net.py:12", 64, 64, shape, same, alike, dict(config), 0.07,
                          one_storage)


def test_each_shape_gets_its_one_call_and_the_rest_nothing() -> None:
    conv = _s("Conv1d", [32, 1, 256], False, in_channels=1, out_channels=1, kernel_size=[7], groups=1)
    assert said([conv]) is conv
    text = sibling_fix(conv).text
    assert "nn.Conv1d(64, 64, 7, groups=64)" in text and "15.6 s" in text, text
    heads = _s("Linear", [64, 256], True, in_features=256, out_features=8)
    text = sibling_fix(heads).text
    assert "one Linear(256, 512)" in text and ".view(..., 64, 8)" in text, text
    ensemble = _s("Sequential", [64, 32], True)
    assert "torch.func.stack_module_state" in sibling_fix(ensemble).text
    experts = _s("Sequential", [18, 128], False)
    one = {"in_channels": 1, "out_channels": 1, "kernel_size": [7], "groups": 1}
    mixed = _s("Conv1d", [32, 1, 256], False, alike=False, **one)
    whole = _s("Conv1d", [32, 64, 256], False, **one)  # (each on every channel: not a slice)
    # A stack of convolutions, each on the last one's output (`for layer in self.layers: x =
    # relu(layer(x))`): its inputs' channels are the layers' own, but each input a new tensor.
    stack = _s("Conv2d", [32, 64, 16, 16], False, one_storage=False, in_channels=64, out_channels=64,
               kernel_size=[3, 3], groups=1)
    assert said([experts, mixed, whole, stack]) is None
