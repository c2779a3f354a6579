"""`gpubottle report` on saved runs and bad input: clear errors with documented exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import gpubottle_here, load_report


def test_rerender_a_saved_run_and_its_report_json(loop_run, tmp_path: Path):
    proc, report = loop_run.proc, loop_run.report
    assert proc.returncode == 0 and report is not None
    run_dir = tmp_path / "run"
    shutil.copytree(loop_run.dir / "run", run_dir)  # the shared run stays as it was
    again = gpubottle_here("report", str(run_dir))
    assert again.returncode == 0
    assert "gpubottle verdict" in again.stdout
    as_json = gpubottle_here("report", str(run_dir / "report.json"), "--format", "json")
    data = json.loads(as_json.stdout)
    assert data["primary"] == report["primary"]
    assert data["steps"]["durations_s"] == report["steps"]["durations_s"]


def test_report_rebuilds_a_run_that_never_finished(loop_run, tmp_path: Path):
    crashed = tmp_path / "crashed"
    shutil.copytree(loop_run.dir / "run", crashed)
    (crashed / "evidence.json").unlink()
    (crashed / "report.json").unlink()
    out = tmp_path / "again.json"
    proc = gpubottle_here("report", str(crashed), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert load_report(out)["steps"]["count"] == 30


def test_bad_inputs_get_one_line_and_exit_3(tmp_path: Path):
    empty = tmp_path / "empty.json"
    empty.write_text("")
    notjson = tmp_path / "x.json"
    notjson.write_text("{ not json")
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    folder = tmp_path / "folder"
    folder.mkdir()
    for path, msg in [
        (tmp_path / "missing.json", "no such file"),
        (empty, "is empty"),
        (notjson, "not valid JSON"),
        (other, "neither a profiler trace"),
        (folder, "holds no trace files"),
    ]:
        proc = gpubottle_here("report", str(path))
        assert proc.returncode == 3, (path, proc.stderr)
        assert msg in proc.stderr
        assert "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) <= 2


def test_a_run_rebuilt_from_another_folder_reads_its_scripts_from_the_runs_own(tmp_path: Path):
    """A run whose evidence was never written, rebuilt by `report` from a folder other than the
    one it ran in: its stacks name the script relative to the run's folder, and the findings read
    from the source (here the generation loop's torch.cat) must not be lost, nor its lines named
    relative to the wrong folder."""
    import recorded_runs

    [recording] = recorded_runs.RUNS.glob("test_a_generation_loop_without_training_steps*.tar.gz")
    run = recorded_runs.unpack(recording, tmp_path / "rec")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = gpubottle_here("report", str(run), "--json", str(tmp_path / "r.json"), cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    first = load_report(tmp_path / "r.json")["findings"][0]["fixes"][0]
    assert "key/value cache" in first["text"], first
    assert first["where"].startswith("tests/scripts/real_code/generate_tokens.py:"), first


def test_a_run_whose_stack_chunks_were_lost_says_its_steps_went_unsampled(tmp_path: Path):
    """py-spy ran (its status ok) but no chunk of the script's samples reached the run directory
    (seen: a compiled model's last chunk never written): the report says the measured steps had no
    stack sample, rather than findings that name nothing with nothing said."""
    import recorded_runs

    [recording] = recorded_runs.RUNS.glob("test_a_conv_net_in_nchw_is_offered_channels_last*.tar.gz")
    run = recorded_runs.unpack(recording, tmp_path / "rec")
    (run / "stacks" / "chunks.jsonl").write_text("")
    proc = gpubottle_here("report", str(run), "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 0, proc.stderr
    rep = load_report(tmp_path / "r.json")
    assert rep["evidence"]["stacks"]["samples_main"] == 0
    note = rep["evidence"]["run"]["collectors"]["py-spy"]["note"]
    assert "no stack sample of the measured steps" in note and "none of its chunks" in note
    assert any("no stack sample of the measured steps" in n for n in rep["notes"]), rep["notes"]
