"""Convolutions and the memory format they run in. A Conv2d model on an NCHW batch (torch's
default) runs its convolutions in that layout; in channels_last (NHWC) oneDNN on a CPU and the
tensor cores on a GPU take faster kernels. Measured here, a 3-block CNN at batch 128 of 32x32
images: 80-85 ms a step as written, 57-70 ms with the model and its batch in channels_last.

The convolutions' share is read from the main thread's stack samples (torch's Conv2d.forward, the
forward's part the user's code cannot see into); whether the script already asks for channels_last
from its source (the script and the file of the model's call).
"""

from __future__ import annotations

from collections.abc import Iterable

from gpubottle.analysis.loop_source import first_naming
from gpubottle.analysis.stacks import Frame, frame_path

_CONV = "/torch/nn/modules/conv.py"
_FORMATS = ("channels_last", "channels_last_3d")


def conv2d_share(stacks: list[list[Frame]]) -> float | None:
    """The share of `stacks` inside a Conv2d's forward; None without samples."""
    if not stacks:
        return None
    n = sum(1 for st in stacks if any(frame_path(f).endswith(_CONV)
                                      and f.name.startswith("Conv2d.") for f in st))
    return round(n / len(stacks), 4)


def channels_last_site(files: Iterable[str | None], cwd: str | None) -> str | None:
    """`file:line` of the first line of code in `files` naming torch.channels_last (not a comment
    or a docstring saying it), None where none does."""
    return first_naming(files, cwd, _FORMATS)
