"""analysis/window_loop.py on sources: a loop over a range whose body slices x[i:i + n] is a loop
over x's windows (its header and body lines); a loop over rows, a slice by another name, or a
loop over anything but a range is not."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.window_loop import window_loop

SOURCE = """def frames(wav, n, hop):
    out = []
    for start in range(0, len(wav) - n + 1, hop):
        frame = wav[start:start + n]
        out.append(frame.sum())
    return out


def rows(x):
    for i in range(len(x)):
        y = x[i] * 2
    for j in range(4):
        z = x[k:k + 2]
    for w in windows:
        v = w[w:w + 2]
    for s in range(0, 10, 2):
        t = x[s:s + 4]
"""


def test_a_range_loop_slicing_windows_is_found_and_others_are_not(tmp_path: Path) -> None:
    path = str(tmp_path / "f.py")
    Path(path).write_text(SOURCE)
    assert window_loop(path, 4) == (3, "wav") and window_loop(path, 3) == (3, "wav")
    assert window_loop(path, 5) == (3, "wav")
    assert window_loop(path, 1) is None and window_loop(path, 11) is None
    assert window_loop(path, 13) is None and window_loop(path, 15) is None
    assert window_loop(path, 17) == (16, "x")
