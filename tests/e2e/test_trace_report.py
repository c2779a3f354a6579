"""`gpubottle report` on real torch.profiler traces from public projects (../shared/traces), through
the CLI (the verdicts in-process: tests/e2e/test_trace_verdicts.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, gpubottle_here

TRACES = ROOT.parent / "shared" / "traces"
NW0 = TRACES / "kineto-resnet50-num_workers_0"
NW4 = TRACES / "kineto-resnet50-num_workers_4"

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="needs ../shared/traces beside the repo")


@pytest.mark.parametrize("content,message", [
    (b"", "is empty"),
    (b"\x1f\x8b\x08\x00garbage-not-deflate" + b"\x00" * 64, "gzip"),
    (b"[1, 2, 3]", "not a trace"),
    (b'{"some": "json"}', "neither a profiler trace"),
    (b"\x00\x01binary", "not a trace"),
])
def test_bad_trace_input_is_one_clear_line(tmp_path: Path, content: bytes, message: str):
    f = tmp_path / "bad.json.gz" if content.startswith(b"\x1f\x8b") else tmp_path / "bad.json"
    f.write_bytes(content)
    proc = gpubottle_here("report", str(f))
    assert proc.returncode == 3, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("gpubottle: error:")


def test_corrupt_gzip_in_the_middle_is_an_error(tmp_path: Path):
    raw = bytearray(next(NW0.glob("*.gz")).read_bytes())
    for i in range(400_000, 400_200):
        raw[i] ^= 0x5A
    f = tmp_path / "corrupt.json.gz"
    f.write_bytes(bytes(raw))
    proc = gpubottle_here("report", str(f))
    assert proc.returncode == 3
    assert "corrupt gzip" in proc.stderr and "Traceback" not in proc.stderr


def test_report_does_not_import_torch():
    code = (
        "import sys\nfrom gpubottle.cli import main\n"
        f"sys.argv = ['gpubottle', 'report', {str(NW4)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert "NO-TORCH" in proc.stderr, proc.stderr
