"""Where a setting's value comes from in the user's code, so a fix says the change where the user
makes it: the literal at the DataLoader call, a variable's assignment, a command-line option
(argparse: recorded as the script declares its options), a config key (OmegaConf/Hydra, a dict, a
dataclass), an environment variable, or a module global that `--key=value` overrides
(nanoGPT's configurator).

Read once per DataLoader (or set_num_threads) call from the calling frame and the source file's
syntax tree; anything that cannot be told is an `expression` with its text, never a guess.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import linecache
import sys
from types import FrameType
from typing import Any

from gpubottle.probes.sites import caller_site, place

Source = dict[str, Any]  # {"kind": literal | variable | option | config | dataclass | env | ...}

# argparse options the script declared: dest -> option strings, default and where
_OPTIONS: dict[str, dict[str, Any]] = {}


def watch_argparse() -> None:
    """Record every option the script declares (before it parses them: scripts often parse their
    arguments before they import torch)."""
    orig = argparse._ActionsContainer.add_argument
    if getattr(orig, "_gpubottle", False):
        return

    @functools.wraps(orig)
    def add_argument(self: Any, *args: Any, **kwargs: Any) -> Any:
        action = orig(self, *args, **kwargs)
        try:
            if action.option_strings:
                flag = action.nargs == 0  # store_true / store_false / store_const: no value to pass
                _OPTIONS[str(action.dest)] = {"options": list(action.option_strings),
                                              "default": _plain(action.default), "site": caller_site(),
                                              "flag": _plain(action.const) if flag else None}
        except Exception:
            pass
        return action

    add_argument._gpubottle = True  # type: ignore[attr-defined]
    argparse._ActionsContainer.add_argument = add_argument  # type: ignore[method-assign]


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool)) or value is None else repr(value)[:80]


@functools.lru_cache(maxsize=64)
def _tree(filename: str) -> ast.Module | None:
    try:
        return ast.parse("".join(linecache.getlines(filename)) or open(filename).read())
    except (OSError, SyntaxError, ValueError):
        return None


def _call_node(frame: FrameType) -> ast.Call | None:
    """The call being made in `frame` (the DataLoader(...) or set_num_threads(...) line)."""
    tree = _tree(frame.f_code.co_filename)
    if tree is None:
        return None
    pos = None
    try:  # 3.11+: the exact expression of the instruction running
        pos = list(frame.f_code.co_positions())[frame.f_lasti // 2]
    except (AttributeError, IndexError):
        pass
    line = frame.f_lineno
    best = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or node.lineno > line or (node.end_lineno or 0) < line:
            continue
        if pos is not None and pos[0] is not None and (node.lineno, node.col_offset) == (pos[0], pos[2]):
            return node
        if best is None or (node.lineno, node.col_offset) >= (best.lineno, best.col_offset):
            best = node  # the innermost call spanning the line
    return best


def _argument(call: ast.Call, name: str, position: int | None) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if position is not None and position < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return call.args[position]
    return None


def _site(frame: FrameType, node: ast.AST) -> str:
    return place(frame.f_code.co_filename, getattr(node, "lineno", frame.f_lineno))


def _env(expr: ast.expr) -> str | None:
    """An environment variable the expression reads: os.environ.get("X"), os.getenv("X"),
    os.environ["X"]."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            fn = ast.unparse(node.func)
            if fn.endswith(("environ.get", "getenv")) and isinstance(node.args[0].value, str):
                return node.args[0].value
        if (isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ")
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            return node.slice.value
    return None


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """A scope's statements, into if/for/while/with/try blocks but not nested functions or classes."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                out += _statements([s for s in inner if isinstance(s, ast.stmt)]
                                   + [x for h in inner if isinstance(h, ast.ExceptHandler) for x in h.body])
    return out


def _assignment(tree: ast.AST, name: str, before: int) -> ast.Assign | ast.AnnAssign | None:
    """The last plain assignment to `name` before line `before` in this scope (not nested ones)."""
    found: ast.Assign | ast.AnnAssign | None = None
    for stmt in _statements(getattr(tree, "body", [])):
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets = [stmt.target]
        else:
            continue
        if stmt.lineno < before and any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found = stmt
    return found


def _scope(frame: FrameType) -> ast.AST | None:
    """The function (or module) whose code the frame runs."""
    tree = _tree(frame.f_code.co_filename)
    if tree is None or frame.f_code.co_name == "<module>":
        return tree
    for node in ast.walk(tree):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name == frame.f_code.co_name and node.lineno <= frame.f_lineno
                <= (node.end_lineno or node.lineno)):
            return node
    return None


def _overridable(frame: FrameType) -> bool:
    """A module whose globals `--key=value` overrides: it execs a configurator (nanoGPT)."""
    tree = _tree(frame.f_code.co_filename)
    return tree is not None and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "exec"
        and "configurator" in ast.unparse(n) for n in ast.walk(tree))


def _option(dest: str) -> Source | None:
    opt = _OPTIONS.get(dest)
    if opt is None:
        return None
    names = sorted(opt["options"], key=lambda o: (not o.startswith("--"), -len(o)))
    given = any(a == o or a.startswith(o + "=") for a in sys.argv[1:] for o in names)
    return {"kind": "option", "option": names[0], "aliases": names[1:], "default": opt["default"],
            "site": opt["site"], "given": given, "flag": opt.get("flag")}


def _chain(expr: ast.expr) -> tuple[str, list[str]] | None:
    """`cfg.data["num_workers"]` -> ("cfg", ["data", "num_workers"]); `cfg.get("num_workers", 0)`
    -> ("cfg", ["num_workers"])."""
    keys: list[str] = []
    node = expr
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        keys.append(node.args[0].value)
        node = node.func.value
    while True:
        if isinstance(node, ast.Attribute):
            keys.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(
                node.slice.value, str):
            keys.append(node.slice.value)
            node = node.value
        else:
            break
    return (node.id, keys[::-1]) if isinstance(node, ast.Name) and keys else None


def _lookup(frame: FrameType, name: str) -> Any:
    if name in frame.f_locals:
        return frame.f_locals[name]
    return frame.f_globals.get(name, frame.f_builtins.get(name))


def _config(frame: FrameType, root: str, keys: list[str]) -> Source | None:
    obj = _lookup(frame, root)
    parent = obj
    for k in keys[:-1]:
        try:
            parent = parent[k] if isinstance(parent, dict) else getattr(parent, k)
        except Exception:
            return None
    kind = type(parent).__module__.split(".")[0]
    if isinstance(obj, argparse.Namespace) and len(keys) == 1:
        return _option(keys[0])
    if kind == "omegaconf":  # Hydra's override syntax on the command line
        hydra = "hydra" in sys.modules
        return {"kind": "config", "key": ".".join(keys), "hydra": hydra,
                "cli": hydra or _merges_cli(frame.f_code.co_filename)}
    if dataclasses.is_dataclass(parent) and not isinstance(parent, type):
        cls = type(parent)
        return {"kind": "dataclass", "class": cls.__qualname__, "field": keys[-1],
                "site": _field_site(cls, keys[-1], frame)}
    if isinstance(parent, dict):
        return {"kind": "config", "key": ".".join(keys), "hydra": False}
    return None


def _merges_cli(filename: str) -> bool:
    """The script merges `key=value` overrides from its command line into its OmegaConf config."""
    text = "".join(linecache.getlines(filename))
    return "from_cli(" in text or "from_dotlist(sys.argv" in text


def _field_site(cls: type, name: str, frame: FrameType) -> str | None:
    """The line of a dataclass field's default: in its module's file, or the calling file."""
    module = sys.modules.get(cls.__module__)
    for filename in (getattr(module, "__file__", None), frame.f_code.co_filename):
        tree = _tree(filename) if filename else None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
                for stmt in node.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and (
                            stmt.target.id == name):
                        return place(str(filename), stmt.lineno)
    return None


def _calls(frame: FrameType, call: ast.Call, callee: str) -> bool:
    text = ast.unparse(call.func)
    if text.endswith(callee):
        return True
    root = _chain(call.func)
    obj = _lookup(frame, root[0]) if root else (_lookup(frame, text) if text.isidentifier() else None)
    for k in (root[1] if root else []):
        obj = getattr(obj, k, None)
    return isinstance(obj, type) and any(c.__name__ == callee for c in obj.__mro__)


FOLLOW = 3  # callers followed from a helper that builds the loader (a factory, a wrapper)


def _parameter(frame: FrameType, name: str) -> bool:
    """`name` is a parameter of the frame's function, not assigned again before the running line."""
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    if code.co_name == "<module>" or name not in code.co_varnames[:n]:
        return False
    scope = _scope(frame)
    return scope is None or _assignment(scope, name, frame.f_lineno) is None


def _passed(frame: FrameType, name: str) -> tuple[FrameType, ast.Call, ast.expr] | None:
    """The caller's argument for parameter `name` of the frame's function: (caller, its call, the
    expression), None when it was not passed (the parameter's default) or cannot be told."""
    caller = frame.f_back
    if caller is None:
        return None
    call = _call_node(caller)
    if call is None:
        return None
    code = frame.f_code
    for kw in call.keywords:
        if kw.arg == name:
            return caller, call, kw.value
    pos = code.co_varnames.index(name)
    # obj.method(...): the call's arguments start after self (a plain function's do not)
    if pos and code.co_varnames[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        pos -= 1
    if pos < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:pos + 1]):
        return caller, call, call.args[pos]
    return None


def _key_in(node: ast.expr, keys: list[str]) -> ast.expr | None:
    """The value written for `keys` in a dict literal (nested dicts followed)."""
    for k in keys:
        if not isinstance(node, ast.Dict):
            return None
        found = next((v for kk, v in zip(node.keys, node.values)
                      if isinstance(kk, ast.Constant) and kk.value == k), None)
        if found is None:
            return None
        node = found
    return node


def _dict_key(frame: FrameType, root: str, keys: list[str], depth: int = 0) -> Source | None:
    """Where a dict written in the script holds `keys`: its literal's line, following `root` from a
    helper's parameter to the argument its callers passed."""
    if _parameter(frame, root):
        got = _passed(frame, root) if depth < FOLLOW else None
        if got is None:
            return None
        caller, _call, arg = got
        if isinstance(arg, ast.Dict):
            return _key_source(caller, _key_in(arg, keys), keys)
        return _dict_key(caller, arg.id, keys, depth + 1) if isinstance(arg, ast.Name) else None
    local = root in frame.f_locals and frame.f_code.co_name != "<module>"
    scope = _scope(frame) if local else _tree(frame.f_code.co_filename)
    before = frame.f_lineno if local or frame.f_code.co_name == "<module>" else 1 << 30
    assign = _assignment(scope, root, before) if scope is not None else None
    if assign is None or assign.value is None:
        return None
    return _key_source(frame, _key_in(assign.value, keys), keys)


def _key_source(frame: FrameType, value: ast.expr | None, keys: list[str]) -> Source | None:
    """A dict literal's value for `keys`, where it is written (its column: --patch edits it)."""
    if value is None:
        return None
    return {"kind": "key", "key": ".".join(keys), "site": _site(frame, value), "col": value.col_offset}


def _default(frame: FrameType, name: str) -> ast.expr | None:
    """The default value a function's def writes for its parameter `name`."""
    fn = _scope(frame)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
    pairs += [(x, d) for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    return next((d for x, d in pairs if x.arg == name), None)


def _argument_source(frame: FrameType, name: str, call: ast.Call, depth: int) -> Source | None:
    """A helper's parameter passed straight to the DataLoader: the value its caller passed, said in
    the caller's terms (an option, a variable, a config key), or the argument written there."""
    got = _passed(frame, name) if depth < FOLLOW else None
    if got is None:  # not passed: the helper's own default for it, where its def writes it
        default = _default(frame, name)
        return ({"kind": "parameter", "name": name, "site": _site(frame, default),
                 "col": default.col_offset} if default is not None else None)
    caller, caller_call, arg = got
    src = source_of(caller, arg, caller_call, depth + 1)
    if src.get("kind") == "literal":  # written at the helper's call, not at the DataLoader's
        return {"kind": "argument", "name": name, "site": src.get("site"), "col": arg.col_offset}
    return src


def source_of(frame: FrameType, expr: ast.expr | None, call: ast.Call, depth: int = 0) -> Source:
    if expr is None:  # not passed: torch's default; the fix adds it to the call
        return {"kind": "default", "site": _site(frame, call)}
    if isinstance(expr, ast.Constant):
        return {"kind": "literal", "site": _site(frame, expr)}
    env = _env(expr)
    if env is not None:
        return {"kind": "env", "name": env, "site": _site(frame, expr)}
    chain = _chain(expr)
    if chain is not None:
        found = _config(frame, *chain)
        if found is not None and found.get("kind") == "config" and not found.get("hydra") and (
                not found.get("cli")):
            found = _dict_key(frame, *chain) or found  # a dict written in the script: its line
        if found is not None:
            return found
    if isinstance(expr, ast.Name) and _parameter(frame, expr.id):
        passed = _argument_source(frame, expr.id, call, depth)
        if passed is not None:
            return passed
    if isinstance(expr, ast.Name):
        local = expr.id in frame.f_locals and frame.f_code.co_name != "<module>"
        scope = _scope(frame) if local else _tree(frame.f_code.co_filename)
        assign = _assignment(scope, expr.id, frame.f_lineno) if scope is not None else None
        if not local and _overridable(frame):
            return {"kind": "global", "name": expr.id, "override": f"--{expr.id}",
                    "site": _site(frame, assign) if assign is not None else None}
        if assign is not None and assign.value is not None:
            if isinstance(assign.value, ast.Constant):
                return {"kind": "variable", "name": expr.id, "site": _site(frame, assign)}
            if depth < 2:  # workers = args.workers; DataLoader(num_workers=workers)
                return source_of(frame, assign.value, call, depth + 1)
    return {"kind": "expression", "text": ast.unparse(expr)[:120], "site": _site(frame, expr)}


# DataLoader's settings a fix may change, and their positions when passed positionally.
LOADER_KNOBS: dict[str, int | None] = {"num_workers": 5, "batch_size": 1, "pin_memory": 7,
                                       "prefetch_factor": None, "persistent_workers": None,
                                       "multiprocessing_context": 11}


def sources(frame: FrameType | None, names: dict[str, int | None], callee: str | None = None
            ) -> dict[str, Source]:
    """For the call running in `frame`: where each named argument's value comes from (`names`:
    argument -> its position when passed positionally). `callee`: the name the call must end with
    (a DataLoader subclass counts). Empty when the call cannot be found."""
    if frame is None:
        return {}
    try:
        call = _call_node(frame)
        if call is None or (callee is not None and not _calls(frame, call, callee)):
            return {}
        return {name: source_of(frame, _argument(call, name, pos), call) for name, pos in names.items()}
    except Exception:
        return {}
