"""Finding the user's own code on the stack and in objects: file:line for fixes to point at."""

from __future__ import annotations

import functools
import inspect
import linecache
import os
import re
import sys
import sysconfig
from types import FrameType
from typing import Any

_LIB_DIRS = tuple(
    os.path.realpath(p)
    for p in {sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    if p
)
# gpubottle's own folder, as Python found it: frames under it are ours, never the script's.
OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OWN_DIR = os.path.realpath(OWN_DIR)  # is_user_file compares resolved names


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    """User code: not the standard library, not an installed package, not gpubottle. (Cached: it
    resolves symlinks, and the probes ask for every frame of every DataLoader construction.)"""
    # (a NUL in the name: a frame py-spy read torn beside busy programs, nobody's file; realpath
    # would raise and lose the run's whole account)
    if not filename or filename.startswith("<") or "\x00" in filename:
        return False
    if os.sep not in filename and not filename.endswith(".py"):
        # A bare name: a frame py-spy read torn ("repl" in "base_module", line 0, alone at the
        # root of its stack; 33 samples of a 12-s run), no file of anyone's.
        return False
    real = resolved(filename)
    if real.startswith(_OWN_DIR + os.sep):
        return False
    if "site-packages" in real or "dist-packages" in real or _generated(real):
        return False
    # The script's folder and the working directory are the user's, wherever they lie: the most
    # specific of those and the interpreter's folders decides (a checkout under the interpreter's
    # prefix is the user's; the standard library under a home-directory working folder is not).
    user = max((len(r) for r in _user_roots() if real.startswith(r)), default=-1)
    lib = max((len(d) for d in _LIB_DIRS if real.startswith(d + os.sep)), default=-1)
    return user > lib or lib < 0


@functools.lru_cache(maxsize=1024)
def _real_dir(folder: str) -> str:
    return os.path.realpath(folder)


def resolved(filename: str) -> str:
    """os.path.realpath(filename), each folder resolved once: realpath lstat-s every part of a path,
    and a leak census asks for the file of every module loaded (~1900 with torch: 66 ms of the
    script's time, where one lstat a file and a folder's parts once take ~5)."""
    path = os.path.abspath(filename)
    folder, name = os.path.split(path)
    if not name or ".." in filename.split(os.sep):  # '..' after a link is the link's parent
        return os.path.realpath(filename)
    real = os.path.join(_real_dir(folder), name)
    return os.path.realpath(real) if os.path.islink(real) else real


# Inductor's output code, by its name wherever its cache lies: c<hash>.py in the folder named by
# the hash's first two characters (a run re-read by `gpubottle report` where TORCHINDUCTOR_CACHE_DIR
# is not set named the compile's site as line 1743 of such a file).
_OUTPUT_CODE = re.compile(r"[/\\]([a-z0-9]{2})[/\\]c\1[a-z0-9]{40,}\.py$")


def _generated(real: str) -> bool:
    """Code torch.compile generated: inductor's cache (/tmp/torchinductor_<user>, or where
    TORCHINDUCTOR_CACHE_DIR says, or any file named as its output code is) and Triton's; the
    script's line is the call that ran it."""
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or ""
    return ("/torchinductor_" in real or f"{os.sep}.triton{os.sep}" in real
            or bool(cache) and real.startswith(_real_dir(cache) + os.sep)
            or _OUTPUT_CODE.search(real) is not None)


def _user_roots() -> tuple[str, ...]:
    return _roots(os.getcwd(), getattr(sys.modules.get("__main__"), "__file__", None))


@functools.lru_cache(maxsize=16)
def _roots(cwd: str, main_file: str | None) -> tuple[str, ...]:
    roots = {_real_dir(cwd)}
    if main_file:
        roots.add(os.path.dirname(resolved(main_file)))
    return tuple(r + os.sep for r in roots if r != "/")


def short_path(filename: str) -> str:
    """Relative to the working directory when inside it: what a user types into their editor."""
    return _short_path(filename, os.getcwd())


@functools.lru_cache(maxsize=4096)
def _short_path(filename: str, cwd: str) -> str:
    try:
        rel = os.path.relpath(filename, cwd)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel


def _cell_files() -> dict[str, Any]:
    """IPython's own map of the file each cell was compiled to -> its execution count, read, not
    copied ({} outside IPython, or where the shell cannot say)."""
    ipy = sys.modules.get("IPython")
    try:
        shell = ipy.get_ipython() if ipy is not None else None
        fmap = shell.compile._filename_map if shell is not None else None
    except Exception:
        return {}
    return fmap if isinstance(fmap, dict) else {}


def notebook_cell(filename: str) -> int | None:
    """The execution count (In [N]) of the notebook cell IPython compiled to `filename` (ipykernel
    names each cell's code after a hash, in a temporary folder the user never sees); None outside
    IPython or for any other file."""
    if "IPython" not in sys.modules:
        return None
    number = _cell_files().get(filename)
    return number if isinstance(number, int) else None


def notebook_cells(limit: int = 40, chars: int = 4000) -> dict[str, str]:
    """The code of the cells the IPython kernel has run (the last `limit`), by execution count."""
    import linecache

    out: dict[str, str] = {}
    for name, number in sorted(_cell_files().items(), key=lambda kv: kv[1])[-limit:]:
        lines = linecache.getlines(name)  # IPython keeps each cell's code there, by its file name
        if isinstance(number, int) and number > 0 and lines:
            out[str(number)] = "".join(lines)[:chars]
    return out


def place(filename: str, line: int) -> str:
    """How a fix names a line: "cell [N], line M" in a notebook, as Jupyter shows the cell; else
    file:line, relative to the working directory when inside it."""
    cell = notebook_cell(filename)
    return f"cell [{cell}], line {line}" if cell is not None else f"{short_path(filename)}:{line}"


_CYCLE = re.compile(r"\bcycle\s*\(")


def calls_cycle(frame: FrameType | None) -> bool:
    """The frame's current line calls itertools.cycle (`cycle(loader)`): an iterator started there is
    cycle's, which keeps every item it yields and replays them once the first pass ends."""
    if frame is None:
        return False
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    return bool(_CYCLE.search(text.split("#", 1)[0]))


def user_frame(skip_frame: FrameType | None = None) -> FrameType | None:
    """The innermost user-code frame calling into torch (None when there is none)."""
    frame = skip_frame or sys._getframe(1)
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back  # type: ignore[assignment]
    return None


def caller_site(skip_frame: FrameType | None = None) -> str | None:
    """file:line of the innermost user-code frame calling into torch (None when there is none)."""
    frame = skip_frame or sys._getframe(1)
    fallback = None
    while frame is not None:
        fn = frame.f_code.co_filename
        if is_user_file(fn):
            return place(fn, frame.f_lineno)
        if fallback is None and "torch" not in fn and not fn.startswith(_OWN_DIR):
            fallback = place(fn, frame.f_lineno)
        frame = frame.f_back  # type: ignore[assignment]
    return fallback


def library_builder(skip_frame: FrameType | None = None) -> str | None:
    """The library entry point the user's code called that ended up in torch (the HF Trainer's
    train(), which builds its DataLoader through accelerate): then the knobs to change are that
    library's, not torch's. None when the user's own code called torch directly."""
    frame = skip_frame or sys._getframe(1)
    outermost = None
    while frame is not None:
        fn = frame.f_code.co_filename
        if is_user_file(fn):
            break
        module = str(frame.f_globals.get("__name__", ""))
        top = module.split(".")[0]
        name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)  # 3.11+: qualified
        # A decorator's closure around DataLoader.__init__ (Lightning records the arguments that
        # way) is not a library building the loader: the user's own call still is.
        if (top and top not in ("torch", "gpubottle", "functools", "contextlib", "typing")
                and "<locals>" not in name):
            outermost = f"{module}.{name}"
        frame = frame.f_back  # type: ignore[assignment]
    return outermost


def _code(obj: Any) -> Any:
    """The code object of a function or method (unwrapped), None when it has none."""
    func = inspect.unwrap(obj)
    return getattr(func, "__code__", None) or getattr(getattr(func, "__func__", None), "__code__", None)


def code_site(obj: Any) -> str | None:
    """file:line where a function or method is defined."""
    try:
        code = _code(obj)
        return place(code.co_filename, code.co_firstlineno) if code is not None else None
    except Exception:
        return None


def user_code_site(obj: Any, owner: type | None = None) -> str | None:
    """file:line of a function where the user wrote it; for one a library defines (TensorDataset's
    __getitem__), the `class` line of the user's subclass that inherits it, else None: a fix never
    points inside an installed library."""
    try:
        code = _code(obj)
        if code is not None and is_user_file(code.co_filename):
            return place(code.co_filename, code.co_firstlineno)
        for cls in (owner.__mro__ if owner is not None else ()):
            path = inspect.getsourcefile(cls)
            if path and is_user_file(path):
                return place(path, inspect.getsourcelines(cls)[1])
    except Exception:
        pass
    return None


def qualname(obj: Any) -> str | None:
    try:
        t = obj if isinstance(obj, type) else type(obj)
        mod = t.__module__
        name = t.__qualname__
        return name if mod in ("__main__", "__mp_main__", "builtins") else f"{mod}.{name}"
    except Exception:
        return None


# A callee on a line: a name or a dotted chain of them, perhaps one subscript (`self.heads[i]`),
# then "(".
_CALLEE = re.compile(r"([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)(\s*\[[^\[\]()]*\])?\s*\(")


def _own_attr(obj: Any, attr: str) -> Any:
    """An instance's own attribute, or an nn.Module's submodule, read from its dicts: no property
    or __getattr__ of the script's runs."""
    d = getattr(obj, "__dict__", None)
    if not isinstance(d, dict):
        return None
    if attr in d:
        return d[attr]
    modules = d.get("_modules")
    return modules.get(attr) if isinstance(modules, dict) else None


def _holds(container: Any, module: Any) -> bool:
    """Whether `module` is one of a container's items (an nn.ModuleList, Sequential or ModuleDict,
    a list, tuple or dict), read from its own dicts: the index itself is never evaluated."""
    if isinstance(container, (list, tuple)):
        return any(x is module for x in container)
    if isinstance(container, dict):
        return any(x is module for x in container.values())
    modules = getattr(container, "__dict__", {}).get("_modules")
    return isinstance(modules, dict) and any(x is module for x in modules.values())


def called_as(module: Any, frame: FrameType, subscripts: bool = False) -> str | None:
    """The name the user's line at `frame` calls `module` by (`net`, `self.encoder`; with
    `subscripts`, `self.heads[i]` too): each callee on the line that is a name or a dotted chain,
    looked up in the frame's variables and objects' own dicts, kept when it is `module` (or,
    subscripted, holds it). None where none is (a library's call; a subscript where a fix would
    assign to the name: `blocks[i] = torch.compile(blocks[i])` is no fix)."""
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    names = frame.f_locals
    for m in _CALLEE.finditer(text):
        parts = [p.strip() for p in m.group(1).split(".")]
        obj = names.get(parts[0], frame.f_globals.get(parts[0]))
        for attr in parts[1:]:
            obj = _own_attr(obj, attr)
        index = m.group(2)
        if index is not None and not subscripts:
            continue
        if obj is module if index is None else _holds(obj, module):
            return ".".join(parts) + ("" if index is None else index.strip())
    return None
