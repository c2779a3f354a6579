"""Where a config key's value is written, for `--patch`: a setting that reached the DataLoader as
`cfg.data.num_workers` (OmegaConf, Hydra) came from a YAML, TOML or JSON file under the run's
working directory, which `--patch` edits as it edits an option's default.

YAML and TOML files are read line by line, as people write them (one `key: value` a line, nesting by
indentation or by `[section]`); JSON by its tokens, so objects written inline are read too. A key
is found by its dotted path in the file, or, for Hydra's
config groups, by the folders it lies in (`conf/data/default.yaml` holds `data.num_workers` as
`num_workers`). The value on that line must be the one the run used. Found in more than one file,
nothing is edited and the files are named instead: which one the run read is not known here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

_SUFFIXES = (".yaml", ".yml", ".toml", ".json")
_SKIP = {"node_modules", "site-packages", "__pycache__", "gpubottle-runs", "venv", "env", "build", "dist"}
_MAX_FILES, _MAX_BYTES, _MAX_DEPTH = 400, 1 << 20, 5

_YAML = re.compile(r"^(\s*)([A-Za-z0-9_.\-]+)\s*:\s*(.*?)\s*(#.*)?$")
_TOML_SECTION = re.compile(r"^\s*\[([A-Za-z0-9_.\-]+)\]\s*(#.*)?$")
_TOML = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=\s*(.*?)\s*(#.*)?$")


@dataclass
class Found:
    path: str
    line: int  # 1-based
    col: int  # the value's span on that line
    end_col: int


def _files(root: str) -> list[str]:
    out: list[str] = []
    base = root.rstrip(os.sep).count(os.sep)
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP
                         and folder.count(os.sep) - base < _MAX_DEPTH)
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.endswith(_SUFFIXES) and os.path.getsize(path) <= _MAX_BYTES:
                out.append(path)
                if len(out) >= _MAX_FILES:
                    return out
    return out


def _same(token: str, value: Any) -> bool:
    text = token.strip().strip("'\"")
    if isinstance(value, bool):
        return text.lower() == str(value).lower()
    return text == str(value)


def _leaves(path: str, lines: list[str]) -> list[tuple[list[str], int, int, int]]:
    """(key path, line, value start, value end) of every `key: value` line of the file."""
    out = []
    if path.endswith(".toml"):
        section: list[str] = []
        for n, text in enumerate(lines, 1):
            m = _TOML_SECTION.match(text)
            if m:
                section = m.group(1).split(".")
                continue
            m = _TOML.match(text)
            if m and m.group(2):
                out.append(([*section, m.group(1)], n, m.start(2), m.end(2)))
        return out
    if path.endswith(".json"):
        return _json_leaves(lines)
    pattern = _YAML
    stack: list[tuple[int, str]] = []
    for n, text in enumerate(lines, 1):
        if not text.strip() or text.lstrip().startswith(("#", "-", "}", "]")):
            if text.strip().startswith(("}", "]")) and stack:
                stack.pop()  # JSON: an object closed
            continue
        m = pattern.match(text)
        if not m:
            continue
        indent, key, value = len(m.group(1)), m.group(2), m.group(3)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        keys = [k for _, k in stack] + key.split(".")
        if value in ("", "{", "["):
            stack.append((indent, key))
        elif not value.startswith(("{", "[")):
            end = m.end(3)
            out.append((keys, n, m.start(3), end))
    return out


_JSON_SCALAR = re.compile(r'"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+\-]*|true|false|null')


def _json_leaves(lines: list[str]) -> list[tuple[list[str], int, int, int]]:
    """Every scalar of a JSON file with its key path and place, however the file is laid out (one
    key a line, or objects written inline: `"data": {"batch_size": 32, "num_workers": 0}`). Values
    inside arrays are left out (no key path names them); a file that is not JSON yields what was
    read before the first surprise."""
    out: list[tuple[list[str], int, int, int]] = []
    stack: list[dict[str, Any]] = []  # open containers: kind, path, the key whose value comes next
    for n, text in enumerate(lines, 1):
        i = 0
        while i < len(text):
            c = text[i]
            if c in " \t\r,:":
                i += 1
                continue
            top = stack[-1] if stack else None
            if c in "{[":
                path = [*top["path"], top["key"]] if top and top["key"] else (top["path"] if top else [])
                in_array = bool(top and (top["kind"] == "[" or top["in_array"]))
                if top is not None:
                    top["key"] = None
                stack.append({"kind": c, "path": path, "key": None, "in_array": in_array})
                i += 1
                continue
            if c in "}]":
                if stack:
                    stack.pop()
                i += 1
                continue
            m = _JSON_SCALAR.match(text, i)
            if m is None:
                return out
            token = m.group(0)
            if top is not None and top["kind"] == "{":
                if top["key"] is None and text[m.end():].lstrip().startswith(":"):
                    top["key"] = token[1:-1]  # a key: its value comes next
                elif top["key"] is not None:
                    if not top["in_array"]:
                        out.append(([*top["path"], top["key"]], n, m.start(), m.end()))
                    top["key"] = None
            i = m.end()
    return out


def find_key(root: str, key: str, value: Any) -> list[Found]:
    """Every line under `root` that writes the dotted `key` with `value`."""
    want = key.split(".")
    found = []
    for path in _files(root):
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        groups = os.path.relpath(os.path.dirname(path), root).split(os.sep)
        for keys, line, start, end in _leaves(path, lines):
            # The whole path in the file, or a Hydra group: the folders hold its first parts.
            lead = len(want) - len(keys)
            placed = keys == want or (lead > 0 and keys == want[lead:] and groups[-lead:] == want[:lead])
            if placed and _same(lines[line - 1][start:end], value):
                found.append(Found(path, line, start, end))
    return found


def written(path: str, value: Any) -> str:
    """`value` as the file's format writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"' if path.endswith((".json", ".toml")) else value
    return str(value)
