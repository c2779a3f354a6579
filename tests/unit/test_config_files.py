"""Finding a config key's line for --patch: nested YAML, a Hydra config group's file, TOML
sections and JSON, only where the value is the one the run used, and never a guess between files."""

from __future__ import annotations

from pathlib import Path

from gpubottle.config_files import find_key, written


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _at(found, root: Path) -> list[tuple[str, int, str]]:
    return [(str(Path(f.path).relative_to(root)), f.line, Path(f.path).read_text().splitlines()[f.line - 1]
             [f.col:f.end_col]) for f in found]


def test_nested_yaml_and_a_hydra_group_file(tmp_path: Path):
    _write(tmp_path, "conf/config.yaml", "trainer:\n  max_epochs: 3\ndata:\n  root: /d\n  num_workers: 0\n")
    assert _at(find_key(str(tmp_path), "data.num_workers", 0), tmp_path) == [("conf/config.yaml", 5, "0")]
    assert find_key(str(tmp_path), "trainer.num_workers", 0) == []
    assert find_key(str(tmp_path), "data.num_workers", 4) == []  # not the value the run used
    group = tmp_path / "g"
    _write(group, "conf/data/imagenet.yaml", "batch_size: 64  # per device\nnum_workers: 2 # few\n")
    assert _at(find_key(str(group), "data.num_workers", 2), group) == [("conf/data/imagenet.yaml", 2, "2")]
    assert _at(find_key(str(group), "data.batch_size", 64), group) == [("conf/data/imagenet.yaml", 1, "64")]


def test_toml_and_json_and_two_files_that_both_write_it(tmp_path: Path):
    _write(tmp_path, "cfg/run.toml", '[data]\nnum_workers = 0\npin_memory = false\n[model]\nwidth = 8\n')
    _write(tmp_path, "cfg/run.json", '{\n  "data": {\n    "num_workers": 0,\n    "x": 1\n  }\n}\n')
    _write(tmp_path, ".venv/lib/site.yaml", "data:\n  num_workers: 0\n")  # never an installed file
    found = sorted(_at(find_key(str(tmp_path), "data.num_workers", 0), tmp_path))
    assert found == [("cfg/run.json", 3, "0"), ("cfg/run.toml", 2, "0")]
    assert _at(find_key(str(tmp_path), "data.pin_memory", False), tmp_path) == [("cfg/run.toml", 3, "false")]
    assert written("a.yaml", True) == "true" and written("a.json", "fork") == '"fork"'
    assert written("a.yml", 4) == "4"


def test_json_objects_written_inline_are_read_by_their_key_paths(tmp_path: Path):
    """`"data": {"batch_size": 32, "num_workers": 0}` on one line (json.dump without indent, or by
    hand): the value is found on that line, strings holding ':' or '}' and arrays left alone."""
    _write(tmp_path, "config.json", '{"data": {"batch_size": 32, "num_workers": 0, "tag": "a:}"},\n'
                                    ' "ids": [0, {"num_workers": 0}], "lr": 0.001}\n')
    [f] = find_key(str(tmp_path), "data.num_workers", 0)
    line = (tmp_path / "config.json").read_text().splitlines()[0]
    assert (f.line, line[f.col:f.end_col]) == (1, "0") and line[:f.col].endswith('"num_workers": ')
    assert find_key(str(tmp_path), "data.tag", "a:}")[0].line == 1
    assert find_key(str(tmp_path), "num_workers", 0) == []  # (the one inside the array has no path)
