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
        function = name.partition("[")[0]  # (a parametrized test's recording names its parameters)
        replays = re.search(rf"def {function}\(\s*replayed_run", source)
        assert replays, (rec.name, "its test no longer replays it")
        assert about["torch"].startswith("2.13"), about


def test_a_run_from_a_temporary_folder_comes_back_in_another(tmp_path, monkeypatch):
    """A test's copy of a script, run from its temporary folder: that folder's paths are @CWD@, put
    back where the replaying test's folder is; the key holds the script's name, not its folder."""
    first, second = tmp_path / "a", tmp_path / "b"
    for cwd in (first, second):
        (cwd / "run").mkdir(parents=True)
        (cwd / "train.py").write_text(SCRIPT.read_text())
    (first / "run" / "meta.json").write_text(json.dumps({"cwd": str(first), "root": str(ROOT)}))
    pack(first / "run", tmp_path / "r.tar.gz", {"test": "t"}, cwd=first)
    with tarfile.open(tmp_path / "r.tar.gz") as tar:
        meta = tar.extractfile("run/meta.json").read().decode()  # type: ignore[union-attr]
    assert str(first) not in meta and "@CWD@" in meta and PLACEHOLDER in meta
    back = unpack(tmp_path / "r.tar.gz", second / "replay0", cwd=second)
    assert json.loads((back / "meta.json").read_text()) == {"cwd": str(second), "root": str(ROOT)}
    assert recording_key(first / "train.py", (), (), 1, None) == recording_key(second / "train.py", (), (), 1,
                                                                                None)


def test_the_key_holds_the_tests_paths_not_the_checkouts_nor_the_machines(tmp_path, monkeypatch):
    support = ROOT / "tests" / "support"
    env = {"PYTHONPATH": f"{support}:/opt/site", "FAKE": "1"}
    key = recording_key(SCRIPT, (), (), 1, env)
    assert key == recording_key(SCRIPT, (), (), 1, {**env, "PYTHONPATH": str(support)})
    assert key != recording_key(SCRIPT, (), (), 1, {**env, "PYTHONPATH": "/opt/site"})
    # The same files in another checkout: the same key.
    clone = tmp_path / "clone"
    (clone / "tests" / "scripts" / "real_code").mkdir(parents=True)
    copy = clone / SCRIPT.relative_to(ROOT)
    copy.write_text(SCRIPT.read_text())
    monkeypatch.setattr(recorded_runs, "ROOT", clone)
    assert key == recording_key(copy, (), (), 1, {**env, "PYTHONPATH": f"{clone}/tests/support"})
