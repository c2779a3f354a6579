"""The report's code changes as a unified diff against the user's files, for `git apply` or
`patch -p1` from the run's working directory. gpubottle never edits a file itself.

Each change is made where the value lives (probes/knobs.py found it): the literal in the
DataLoader call, a missing argument added to it, the variable's assignment, the option's default
in add_argument, the dataclass field's default, a config key's line in the YAML/TOML/JSON file it
came from (config_files.py). A change that is not a line of code (an environment variable, how
often to save) is listed as a note instead. Measured fixes (from
--try-fixes) come first, as in the report.
"""

from __future__ import annotations

import ast
import difflib
import os
from dataclasses import dataclass, field
from typing import Any

from gpubottle.analysis.loop_source import split_site
from gpubottle.config_files import find_key, written
from gpubottle.evidence import Evidence, LoaderInfo
from gpubottle.probes.trial import BATCH_INDEX_KEY
from gpubottle.report import Fix, Report


@dataclass
class Edit:
    path: str  # absolute
    line: int
    col: int
    end_line: int
    end_col: int
    text: str  # the replacement (an insertion when the span is empty)


@dataclass
class Patch:
    diff: str = ""
    changes: list[str] = field(default_factory=list)  # what the diff does, one line each
    notes: list[str] = field(default_factory=list)  # changes that are not a line of code


def _tree(path: str) -> ast.Module | None:
    try:
        with open(path) as fh:
            return ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None


def _calls_at(tree: ast.Module, line: int, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno <= line <= (n.end_lineno or 0)
            and ast.unparse(n.func).endswith(name)]


def _replace(path: str, node: ast.expr, value: Any) -> Edit:
    return Edit(path, node.lineno, node.col_offset, node.end_lineno or node.lineno,
                node.end_col_offset or node.col_offset, repr(value))


def _add_argument(path: str, call: ast.Call, text: str) -> Edit:
    """Insert `text` as the call's last argument, before its closing parenthesis."""
    end_line, end_col = call.end_lineno or call.lineno, (call.end_col_offset or 1) - 1
    with open(path) as fh:
        lines = fh.read().splitlines()
    before = lines[end_line - 1][:end_col].rstrip()
    sep = "" if before.endswith(("(", ",")) else ", "
    if before.endswith(",") and not lines[end_line - 1][:end_col].endswith(" "):
        sep = " "
    return Edit(path, end_line, end_col, end_line, end_col, f"{sep}{text}")


def _keyword(call: ast.Call, key: str, position: int | None) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == key:
            return kw.value
    if position is not None and position < len(call.args):
        return call.args[position]
    return None


POSITIONS = {"num_workers": 5, "batch_size": 1, "pin_memory": 7, "multiprocessing_context": 11}


def _at_call(key: str, new: Any, call_site: str | None, cwd: str) -> Edit | str:
    """The literal in the DataLoader (or set_num_threads) call, or the argument added to it."""
    where = split_site(call_site, cwd)
    tree = _tree(where[0]) if where else None
    callee = "set_num_threads" if key == "torch.set_num_threads" else "DataLoader"
    calls = _calls_at(tree, where[1], callee) if tree is not None and where else []
    if not calls or where is None:
        return f"{key}: the call at {call_site} was not found (has the file changed since the run?)"
    call = calls[-1]
    if key == "torch.set_num_threads":
        return _replace(where[0], call.args[0], new) if call.args else f"{key}: no argument to set"
    node = _keyword(call, key, POSITIONS.get(key))
    if node is not None:
        return _replace(where[0], node, new)
    return _add_argument(where[0], call, f"{key}={new!r}")


def _source(text: str, node: ast.AST) -> str:
    return ast.get_source_segment(text, node) or ast.unparse(node)


def _drop_keyword(path: str, call: ast.Call, kw: ast.keyword) -> Edit:
    """Remove `, name=value` from the call: from the end of the argument before it."""
    nodes: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    ends = [(a.end_lineno or a.lineno, a.end_col_offset or 0) for a in nodes]
    line, col = max(e for e in ends if e <= (kw.lineno, kw.col_offset))
    return Edit(path, line, col, kw.end_lineno or kw.lineno, kw.end_col_offset or 0, "")


def batch_index_edits(call_site: str | None, cwd: str) -> list[Edit] | str:
    """DataLoader(ds, batch_size=B, shuffle=S, drop_last=D) rewritten to hand the dataset each
    batch's indices at once: batch_size=None, sampler=BatchSampler(RandomSampler(ds) (or
    SequentialSampler, or the script's own sampler), B, drop_last=D), shuffle and drop_last
    taken out (torch refuses them beside batch_size=None). Written with the torch module's own
    names, so nothing needs importing beyond `import torch`. A batch_sampler=X becomes
    batch_size=None, sampler=X."""
    where = split_site(call_site, cwd)
    tree = _tree(where[0]) if where else None
    calls = _calls_at(tree, where[1], "DataLoader") if tree is not None and where else []
    if not calls or where is None or tree is None:
        return f"batch_index: the DataLoader call at {call_site} was not found (has the file changed?)"
    path, call = where[0], calls[-1]
    with open(path) as fh:
        text = fh.read()  # (read once: each piece of the call is quoted from it)
    if len(call.args) > 2 or any(k.arg is None for k in call.keywords):
        return (f"batch_index: the DataLoader call at {call_site} passes its settings by position: "
                "edit it by hand")
    kws = {k.arg: k for k in call.keywords}
    if "batch_sampler" in kws:  # torch's BatchSampler (the probe checked): the same one, as sampler=
        kw = kws["batch_sampler"]
        return [Edit(path, kw.lineno, kw.col_offset, kw.end_lineno or kw.lineno, kw.end_col_offset or 0,
                     f"batch_size=None, sampler={_source(text, kw.value)}")]
    if not any(isinstance(n, ast.Import) and any(a.name == "torch" and a.asname is None for a in n.names)
               for n in ast.walk(tree)):
        return f"batch_index: {os.path.relpath(path, cwd)} does not `import torch`: edit the call by hand"
    dataset = call.args[0] if call.args else (kws["dataset"].value if "dataset" in kws else None)
    if dataset is None:
        return f"batch_index: the DataLoader call at {call_site} names no dataset"
    size = _keyword(call, "batch_size", 1)
    ds = _source(text, dataset)
    named = None
    if not isinstance(dataset, (ast.Name, ast.Attribute)) and "sampler" not in kws:
        # An expression (TensorDataset(x, y)) is built once, named where it is passed, and the
        # sampler made here reads that name: evaluating it twice would build a second dataset (the
        # script's own sampler= needs no name).
        taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        name = next(n for n in ("dataset", "data_set", "_dataset", "_gpubottle_dataset") if n not in taken)
        named, ds = Edit(path, dataset.lineno, dataset.col_offset, dataset.end_lineno or dataset.lineno,
                         dataset.end_col_offset or 0, f"({name} := {ds})"), name
    data = "torch.utils.data"
    if "sampler" in kws:
        inner = _source(text, kws["sampler"].value)
    elif "shuffle" in kws:
        flag = kws["shuffle"].value
        inner = (f"{data}.RandomSampler({ds})" if isinstance(flag, ast.Constant) and flag.value else
                 f"{data}.SequentialSampler({ds})" if isinstance(flag, ast.Constant) else
                 f"({data}.RandomSampler({ds}) if {_source(text, flag)} else {data}.SequentialSampler({ds}))")
    else:
        inner = f"{data}.SequentialSampler({ds})"
    drop = _source(text, kws["drop_last"].value) if "drop_last" in kws else "False"
    sampler = (f"{data}.BatchSampler({inner}, {_source(text, size) if size is not None else '1'}, "
               f"drop_last={drop})")
    edits = [_drop_keyword(path, call, kws[k]) for k in ("shuffle", "drop_last", "sampler") if k in kws]
    edits += [named] if named is not None else []
    if size is not None:
        edits.append(_replace(path, size, None))
        edits.append(_add_argument(path, call, f"sampler={sampler}"))
    else:
        edits.append(_add_argument(path, call, f"batch_size=None, sampler={sampler}"))
    return edits


def _at_assignment(key: str, new: Any, src: dict[str, Any], cwd: str) -> Edit | str:
    """A variable's, a module global's or a dataclass field's value."""
    where = split_site(src.get("site"), cwd)
    tree = _tree(where[0]) if where else None
    target = src.get("name") or src.get("field")
    if tree is None or where is None:
        return f"{key}: {src.get('site')} could not be read"
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno == where[1]:
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if target in names:
                return _replace(where[0], node.value, new)
        if (isinstance(node, ast.AnnAssign) and node.lineno == where[1] and node.value is not None
                and isinstance(node.target, ast.Name) and node.target.id == target):
            return _replace(where[0], node.value, new)
    return f"{key}: the assignment at {src.get('site')} was not found"


def _at_value(key: str, new: Any, src: dict[str, Any], cwd: str) -> Edit | str:
    """The value written where a helper's caller passes it: a dict literal's value, an argument at
    the helper's call, the helper's default (probes/knobs.py recorded its line and column)."""
    where = split_site(src.get("site"), cwd)
    tree = _tree(where[0]) if where else None
    if tree is None or where is None or src.get("col") is None:
        return f"{key}: {src.get('site')} could not be read"
    for node in ast.walk(tree):
        if (isinstance(node, ast.expr) and getattr(node, "lineno", None) == where[1]
                and node.col_offset == src["col"] and not isinstance(node, ast.Name)):
            return _replace(where[0], node, new)
    return f"{key}: the value at {src.get('site')} was not found (has the file changed since the run?)"


def _at_option(key: str, new: Any, src: dict[str, Any], cwd: str) -> Edit | str:
    """The option's default in its add_argument call."""
    where = split_site(src.get("site"), cwd)
    tree = _tree(where[0]) if where else None
    calls = _calls_at(tree, where[1], "add_argument") if tree is not None and where else []
    named = [c for c in calls if any(isinstance(a, ast.Constant) and a.value == src.get("option")
                                     for a in c.args)]
    call = named[0] if named else (calls[0] if calls else None)
    if call is None or where is None:
        return f"{key}: the option's add_argument at {src.get('site')} was not found"
    node = _keyword(call, "default", None)
    if node is not None:
        return _replace(where[0], node, new)
    return _add_argument(where[0], call, f"default={new!r}")


def _at_config(key: str, old: Any, new: Any, src: dict[str, Any], cwd: str) -> Edit | str:
    """The config key's line in the one file under the working directory that writes it."""
    found = find_key(cwd, str(src.get("key")), old)
    if len(found) == 1:
        f = found[0]
        return Edit(f.path, f.line, f.col, f.line, f.end_col, written(f.path, new))
    if found:
        files = ", ".join(f"{os.path.relpath(f.path, cwd)}:{f.line}" for f in found[:4])
        return (f"{key}: {src.get('key')}: {old} is written in {len(found)} files ({files}): edit the one "
                "the run read")
    return ""


def _edit(key: str, new: Any, src: dict[str, Any] | None, call_site: str | None, cwd: str,
          old: Any = None) -> Edit | str:
    """The edit that sets `key` to `new`, "" when it is not a line of code, or why there is none."""
    kind = (src or {}).get("kind", "literal")
    if src is not None and kind == "config" and src.get("key"):
        return _at_config(key, old, new, src, cwd)
    if kind in ("literal", "default"):
        return _at_call(key, new, call_site, cwd)
    if src is not None and kind in ("variable", "global", "dataclass"):
        return _at_assignment(key, new, src, cwd)
    if src is not None and kind == "option":
        return _at_option(key, new, src, cwd)
    if src is not None and kind in ("key", "argument", "parameter"):
        return _at_value(key, new, src, cwd)
    return ""  # an environment variable, an expression: said in words, not a patch


def _apply(text: str, edits: list[Edit]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(line: int, col: int) -> int:
        return offsets[line - 1] + len(lines[line - 1].encode()[:col].decode(errors="ignore"))

    for e in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
        a, b = at(e.line, e.col), at(e.end_line, e.end_col)
        text = text[:a] + e.text + text[b:]
    return text


def _loader_of(ev: Evidence, fix: Fix) -> LoaderInfo | None:
    loaders = list(ev.loaders) + [p.loader for p in ev.phases if p.loader is not None]
    sites = {x.site for x in loaders if x.site}
    for lo in loaders:
        if lo.site and (lo.site == fix.where or any(s.get("site") == fix.where for s in lo.sources.values())):
            return lo
    return next((x for x in loaders if x.batches), None) if len(sites) == 1 else None


def _promised(fix: Fix) -> bool:
    """A change measured by --try-fixes, or one whose gain the report predicts."""
    return (fix.expected_step_s is not None or fix.expected_run_s is not None
            or (fix.expected or "").endswith("(measured)"))


def make_patch(report: Report) -> Patch:
    ev = report.evidence
    cwd = ev.run.cwd or os.getcwd()
    out = Patch()
    edits: dict[str, list[Edit]] = {}
    seen: set[tuple[str, str]] = set()
    for f in report.findings:
        for fix in f.fixes:
            if not fix.change:
                continue
            if not _promised(fix):  # an experiment ("try ..."): the user times it first
                out.notes.append("not in the patch, to try and time first: " + fix.text[:200])
                continue
            lo = _loader_of(ev, fix)
            for key, (old, new) in fix.change.items():
                src = fix.source.get(key) or (lo.sources.get(key) if lo else None)
                call_site = ev.cpu.threads_site if key == "torch.set_num_threads" and ev.cpu else (
                    lo.site if lo else fix.where)
                if (key, str(call_site)) in seen:
                    continue  # the first fix that changes a setting decides it (measured ones first)
                seen.add((key, str(call_site)))
                if key == BATCH_INDEX_KEY and new:
                    done = batch_index_edits(call_site, cwd)
                    if isinstance(done, str):
                        out.notes.append(done)
                        continue
                    edits.setdefault(done[0].path, []).extend(done)
                    out.changes.append(f"whole batches indexed: batch_size=None, a BatchSampler "
                                       f"({os.path.relpath(done[0].path, cwd)}:{done[0].line})")
                    continue
                edit = _edit(key, new, src, call_site, cwd, old) if key in (*POSITIONS, "persistent_workers",
                                                                      "prefetch_factor",
                                                                      "torch.set_num_threads") else ""
                if isinstance(edit, Edit):
                    edits.setdefault(edit.path, []).append(edit)
                    out.changes.append(f"{key}: {old} -> {new} ({os.path.relpath(edit.path, cwd)}:"
                                       f"{edit.line})")
                elif edit:
                    out.notes.append(edit)
                else:
                    out.notes.append(f"{key}: {old} -> {new}: " + (fix.how or fix.text)[:200])
    diffs = []
    for path, mine in edits.items():
        rel = os.path.relpath(path, cwd)
        if rel.startswith(".."):
            out.notes.append(f"{path}: outside the run's working directory {cwd}: not in the patch")
            continue
        with open(path) as fh:
            old_text = fh.read()
        new_text = _apply(old_text, mine)
        diffs.append("".join(difflib.unified_diff(old_text.splitlines(keepends=True),
                                                  new_text.splitlines(keepends=True),
                                                  f"a/{rel}", f"b/{rel}")))
    out.diff = "".join(diffs)
    return out
