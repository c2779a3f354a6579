"""The recorded runs the replayed tests diagnose (tests/support/recorded_runs.py)."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import recorded_runs
from recorded_runs import PLACEHOLDER, ROOT, pack, recording_key, unpack

SCRIPT = ROOT / "tests" / "scripts" / "real_code" / "keep_best.py"


def test_paths_under_the_checkout_come_back_where_the_suite_runs(tmp_path, monkeypatch):
    run = tmp_path / "run"
    (run / "stacks").mkdir(parents=True)
    (run / "meta.json").write_text(json.dumps({"cwd": str(ROOT), "target": "train.py"}))
    (run / "stacks" / "chunk-1-0000.speedscope.json").write_text(f'{{"file": "{ROOT}/train.py"}}')
    for derived in ("evidence.json", "report.json", "index.html", "stacks/profile.speedscope.json"):
        (run / derived).write_text("{}")
    pack(run, tmp_path / "r.tar.gz", {"test": "t"})
    with tarfile.open(tmp_path / "r.tar.gz") as tar:
        names = sorted(tar.getnames())
        meta = tar.extractfile("run/meta.json").read().decode()  # type: ignore[union-attr]
    assert names == ["recording.json", "run/meta.json", "run/stacks/chunk-1-0000.speedscope.json"]
    assert str(ROOT) not in meta and PLACEHOLDER in meta
    # Unpacked in another checkout: its own root.
    elsewhere = tmp_path / "clone"
    monkeypatch.setattr(recorded_runs, "ROOT", elsewhere)
    back = unpack(tmp_path / "r.tar.gz", tmp_path / "out")
    assert json.loads((back / "meta.json").read_text())["cwd"] == str(elsewhere)
    assert f"{elsewhere}/train.py" in (back / "stacks" / "chunk-1-0000.speedscope.json").read_text()


def test_the_key_changes_with_the_script_and_its_command(tmp_path, monkeypatch):
    monkeypatch.setattr(recorded_runs, "ROOT", tmp_path)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.read_text())
    key = recording_key(script, ("--steps", "40"), ("--no-status",), 1, None)
    assert key == recording_key(script, ("--steps", "40"), ("--no-status",), 1, None)
    assert key != recording_key(script, ("--steps", "41"), ("--no-status",), 1, None)
    assert key != recording_key(script, ("--steps", "40"), ("--no-stacks",), 1, None)
    assert key != recording_key(script, ("--steps", "40"), ("--no-status",), None, None)
    assert key != recording_key(script, ("--steps", "40"), ("--no-status",), 1, {"A": "1"})
    script.write_text(SCRIPT.read_text() + "# edited\n")
    assert key != recording_key(script, ("--steps", "40"), ("--no-status",), 1, None)


def test_every_recording_is_of_a_test_that_replays_it():
    tests = {p.stem: p.read_text() for p in (ROOT / "tests" / "e2e").glob("test_*.py")}
    recordings = sorted(recorded_runs.RUNS.glob("*.tar.gz"))
    assert recordings
    for rec in recordings:
        with tarfile.open(rec) as tar:
            about = json.loads(tar.extractfile("recording.json").read())  # type: ignore[union-attr]
        path, _, name = about["test"].partition("::")
        assert rec.name.startswith(f"{name}-") or rec.name.startswith(f"{name}."), rec.name
        source = tests[Path(path).stem]
        assert re.search(rf"def {name}\(\s*replayed_run", source), (rec.name, "its test no longer replays it")
        assert about["torch"].startswith("2.13"), about
