"""Many modules of one class the forward calls one by one from one line (probes/inner_calls.py's
siblings), where one module or one batched call computes them all, the same outputs:

- convolutions each on a slice of the input's channels (a depthwise convolution written as 64
  Conv1d(1, 1, 7)): one convolution with groups= their number. Measured on this VM, 32 x 256
  steps: 300 steps 15.6 s as the list, 4.1 s as Conv1d(64, 64, 7, groups=64).
- Linear layers on the very same input (a head per task): one Linear as wide as all of them, its
  output viewed as one slice each. Measured here, 32 Linear(256, 8) heads at batch 64 with Adam:
  500 steps 1.56-1.7 s, one Linear(256, 256) 0.39-0.4 s.
- other modules alike on the same input (an ensemble of one network): torch.func.
  stack_module_state and torch.vmap over functional_call (torch's model-ensembling recipe).
  Measured here, 16 MLPs 32-64-1 at batch 128 trained with Adam: 1500 steps 4.8-4.9 s one by
  one, 1.8-1.9 s vmapped.
Anything else (a mixture of experts, each on its own tokens) is not said."""

from __future__ import annotations

from gpubottle.evidence import SiblingModules
from gpubottle.report import Fix
from gpubottle.units import pct

_CONVS = ("Conv1d", "Conv2d", "Conv3d")


def _grouped_conv(s: SiblingModules) -> bool:
    c = s.config
    # Slices of one tensor's channels: a stack of layers, each on the last one's output, is not
    # (its inputs are each a new tensor).
    return (s.module in _CONVS and s.one_storage and c.get("groups") == 1 and bool(s.input_shape)
            and len(s.input_shape or ()) >= 2 and (s.input_shape or [0, 0])[1] == c.get("in_channels"))


def said(siblings: list[SiblingModules]) -> SiblingModules | None:
    """The first siblings a fix can name."""
    return next((s for s in siblings if s.alike and (_grouped_conv(s) or s.same_input)), None)


def sibling_fix(s: SiblingModules) -> Fix:
    where = f"{s.modules} {s.module} modules called one by one at {s.site or 'a line not known'} (`{s.name}`)"
    share = (f" Their forwards took {pct(s.share)} of the main thread's samples here (their backward "
             "more, not told apart by line)." if s.share is not None else "")
    c = s.config
    if _grouped_conv(s):
        k = c.get("kernel_size")
        kernel = k[0] if isinstance(k, list) and len(set(k)) == 1 else k
        cin, cout = int(c.get("in_channels") or 1), int(c.get("out_channels") or 1)
        text = (f"the {where}, each on {cin} channel{'s' if cin > 1 else ''} of the input, are one "
                f"grouped convolution: nn.{s.module}({s.modules * cin}, {s.modules * cout}, {kernel}, "
                f"groups={s.modules}) (its padding and stride theirs) on the whole input gives the same "
                "outputs in their order, its weight their kernels stacked (torch.cat([m.weight for m in "
                f"...])), in one call forward and one backward.{share} On a test machine 64 Conv1d(1, 1, "
                "7) over 32 x 256 steps ran 300 steps in 15.6 s as a list, 4.1 s grouped; try it and "
                "time it")
    elif s.module == "Linear":
        fin, fout = c.get("in_features"), c.get("out_features")
        text = (f"the {where}, all on the same input, are one Linear({fin}, {s.modules * int(fout or 1)}): "
                f"its output .view(..., {s.modules}, {fout}) (or .split({fout}, dim=-1)) gives each one's "
                f"(its weight theirs stacked, torch.cat([m.weight for m in ...])), in one call forward "
                f"and one backward.{share} On a test machine 32 Linear(256, 8) heads at batch 64 ran "
                "500 steps in 1.56-1.7 s, as one Linear(256, 256) in 0.39-0.4 s; try it and time it")
    else:
        text = (f"the {where}, alike and all on the same input, can run as one batched call: "
                "params, buffers = torch.func.stack_module_state(modules), then torch.vmap over "
                "torch.func.functional_call (torch's model-ensembling recipe: one call of each op for "
                "all of them; to train them so, the stacked tensors become the parameters the "
                f"optimizer holds).{share} On a test machine 16 MLPs 32-64-1 at batch 128 with Adam "
                "ran 1500 steps in 4.8-4.9 s one by one, 1.8-1.9 s vmapped; try it and time it")
    return Fix(text=text, where=s.site)
