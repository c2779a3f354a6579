"""The command line read in-process (cli.main(argv) -> exit code): usage errors, and `-m` read as
python reads it, so every spelling torchrun accepts reaches torchrun."""

from __future__ import annotations

import pytest

from gpubottle.cli import main, module_args


@pytest.mark.parametrize("argv", [
    ["run", "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py", "--lr", "1"],
    ["run", "-m", "torch.distributed.run", "--nproc-per-node=2", "--standalone", "train.py"],
    ["run", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "train.py"],
    ["run", "--out", "d", "--steps", "5", "-m", "torch.distributed.run", "--nproc-per-node", "2", "t.py"],
    ["run", "-mtorch.distributed.run", "--nproc-per-node", "2", "train.py"],
    ["run", "--module=torch.distributed.run", "--nproc-per-node", "2", "train.py"],
    ["run", "--patch", "p.diff", "-m", "torch.distributed.run", "--nproc-per-node", "2", "t.py"],
])
def test_after_the_module_everything_is_the_modules(argv: list[str]):
    out = module_args(argv)
    i = out.index("--")
    assert any(a.startswith(("-m", "--module")) for a in out[:i])
    assert out[i + 1:] == argv[len(out[:i]):]  # torchrun's options, untouched, after the module
    assert not any("nproc" in a for a in out[:i])  # none of them read as gpubottle's own


def test_a_script_keeps_its_arguments_and_ours_stay_ours():
    argv = ["run", "--nproc-per-node", "2", "--out", "-m", "train.py", "-m", "x"]
    assert module_args(argv) == argv  # --out's value is "-m"; the script starts at train.py
    assert module_args(["report", "-m"]) == ["report", "-m"]


def test_usage_errors_in_process(capsys: pytest.CaptureFixture[str], tmp_path):
    assert main(["run", "--steps", "0", "x.py"]) == 2
    assert main(["run", "--bogus", "x.py"]) == 2
    assert "no such option: --bogus" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.py")]) == 3
    assert main(["report"]) == 2
    assert main(["report", "--format", "xml", "x"]) == 2
    assert main(["--version"]) == 0
    assert main(["gate", str(tmp_path / "nothing.json")]) == 3
    assert not (tmp_path / "run").exists()
