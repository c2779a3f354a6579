"""Whether a dataset's line opens and reads the same file again for every sample: `with
open(self.path) as f: line = f.readlines()[i]`, `with zipfile.ZipFile(path) as z:` in __getitem__,
the path not depending on the sample's index. Each sample then pays for the whole file (or the
archive's directory) to take its own part. Measured here: a 5,000-line CSV read whole for each
line, 41 ms a batch of 64; a zip of 3,000 members opened for each, 595 ms a batch.

Read from the script's source at the sample's line (py-spy gives it): the line opens a file with a
path that reads no parameter of its function (the index) nor any name made from one, or it sits in
the body of a `with` that does and reads the opened handle."""

from __future__ import annotations

import ast
import functools

from gpubottle.analysis.loop_source import parsed

# Calls that open or read a whole file by path: builtins, and the last part of a dotted name.
_OPENERS = {"open", "ZipFile", "TarFile", "File", "load", "loadtxt", "genfromtxt", "fromfile",
            "read_csv", "read_parquet", "read_json", "read_table", "read_excel", "connect", "memmap"}
# (np.memmap made again for every sample: numpy's Python __new__, an mmap and its unmapping, ~40 us
# a sample of 1 KiB: most of a 40,000-row dataset's loading, where a map kept from __init__ indexes)
# (a database connected to for every sample: sqlite3 reads the file's schema again at its first
# query, 0.2 ms a sample of a 50,000-row table)
_OPENER_ROOTS = {"open", "io", "zipfile", "tarfile", "h5py", "np", "numpy", "pd", "pandas", "torch", "gzip",
                 "bz2", "lzma", "sqlite3", "lmdb", "shelve", "dbm"}


def _function(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
             and n.lineno <= line <= (n.end_lineno or n.lineno)]
    return max(found, key=lambda n: n.lineno) if found else None


def _tainted(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The function's parameters (but self/cls) and every name it assigns from one, transitively."""
    a = fn.args
    out = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs] if p.arg not in ("self", "cls")}
    out |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
    # (a `with` binds too: a handle opened by the sample's own path carries the index, and so does
    # what is read from it: `np.load(io.BytesIO(f.read()))` under `with gzip.open(self.files[i])`)
    binds: list[tuple[ast.expr | None, list[ast.expr]]] = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            binds.append((n.value, n.targets))
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            binds.append((n.value, [n.target]))
        elif isinstance(n, ast.For):
            binds.append((n.iter, [n.target]))
        elif isinstance(n, (ast.With, ast.AsyncWith)):
            binds += [(i.context_expr, [i.optional_vars]) for i in n.items if i.optional_vars is not None]
    grew = True
    while grew:
        grew = False
        for value, targets in binds:
            if value is None or not _reads(value, out):
                continue
            for t in targets:
                for name in ast.walk(t):
                    if isinstance(name, ast.Name) and name.id not in out:
                        out.add(name.id)
                        grew = True
    return out


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _opener(call: ast.AST) -> bool:
    if not isinstance(call, ast.Call) or not (call.args or call.keywords):
        return False
    f = call.func
    if isinstance(f, ast.Name):
        return f.id == "open"
    if isinstance(f, ast.Attribute) and f.attr in _OPENERS:
        root = f.value
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id in _OPENER_ROOTS
    return False


def _same_path(call: ast.Call, tainted: set[str]) -> bool:
    """The call opens a path that does not depend on the sample: no argument reads the index."""
    return not any(_reads(a, tainted) for a in [*call.args, *(k.value for k in call.keywords)])


def _on(node: ast.stmt | ast.expr, line: int) -> bool:
    return node.lineno <= line <= (node.end_lineno or node.lineno)


@functools.lru_cache(maxsize=256)
def same_file_opened(path: str, line: int) -> str | None:
    """The source of the call at path:line (or of the `with` around it) that opens a file whose
    path does not depend on its function's parameters; None where there is none (or unreadable)."""
    p = parsed(path)
    if p is None:
        return None
    source, tree = p
    fn = _function(tree, line)
    if fn is None:
        return None
    tainted = _tainted(fn)
    for node in ast.walk(fn):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if not (_opener(call) and isinstance(call, ast.Call) and _same_path(call, tainted)):
                    continue
                handle = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else None
                # A file opened once around a loop (main's log file) is not opened per call; one
                # whose loop runs through the file (to the sample's line) reads it whole each call.
                through = handle is not None and any(
                    isinstance(s, (ast.For, ast.AsyncFor)) and _reads(s.iter, {handle}) for s in node.body)
                if not through and any(isinstance(s, (ast.For, ast.AsyncFor, ast.While)) for s in node.body):
                    continue
                # (the body's own simple statements: one inside an `if` there reads it all the same)
                # (and a loop's header running through the handle: `for j, line in enumerate(f):`)
                body: list[ast.stmt | ast.expr] = [
                    s.iter if isinstance(s, (ast.For, ast.AsyncFor)) else s for s in ast.walk(node)
                    if isinstance(s, (ast.For, ast.AsyncFor))
                    or (isinstance(s, ast.stmt) and not hasattr(s, "body"))]
                if _on(call, line) or any(_on(s, line) and handle and _reads(s, {handle}) for s in body):
                    return ast.get_source_segment(source, call) or ast.unparse(call)
        elif isinstance(node, ast.stmt) and not isinstance(node, (ast.With, ast.AsyncWith)) and \
                not hasattr(node, "body") and _on(node, line):
            if _opened_once(fn, node):
                return None
            for sub in ast.walk(node):
                if _opener(sub) and isinstance(sub, ast.Call) and _same_path(sub, tainted):
                    return ast.get_source_segment(source, sub) or ast.unparse(sub)
            # ...or reads a handle the function opened so (`con = sqlite3.connect(self.db)`, then
            # `con.execute(...)`: the file is read at the first query)
            for name, call in _handles(fn, tainted).items():
                if _reads(node, {name}):
                    return ast.get_source_segment(source, call) or ast.unparse(call)
    return None


def _reads_at(node: ast.AST, handle: str, tainted: set[str]) -> bool:
    """The statement reads the handle at a place made from the index: `f.seek(self.offsets[i])`,
    `z.read(self.names[i])`, `h["x"][i]` (not `f.readlines()[i]`: the whole file, then the line)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                isinstance(n.func.value, ast.Name) and n.func.value.id == handle and \
                any(_reads(a, tainted) for a in [*n.args, *(k.value for k in n.keywords)]):
            return True
        if isinstance(n, ast.Subscript) and _reads(n.slice, tainted):
            root: ast.expr = n.value
            while isinstance(root, ast.Subscript):
                root = root.value
            if isinstance(root, ast.Name) and root.id == handle:
                return True
    return False


@functools.lru_cache(maxsize=256)
def reads_own_part(path: str, line: int) -> bool:
    """`line` is in the body of a `with` that opens the same file for every sample (above) and
    that body reads the sample's own part of it (seeks to its offset, reads its member): each
    sample pays for the open, not for reading the whole file, so the line's work beneath (parsing
    what it read) is its own kind, not the file's (a JSON-lines file seeked by offset: the open
    ~4 us of a sample's ~40, json.loads 26)."""
    p = parsed(path)
    fn = None if p is None else _function(p[1], line)
    if p is None or fn is None:
        return False
    tainted = _tainted(fn)
    for node in ast.walk(fn):
        if not isinstance(node, (ast.With, ast.AsyncWith)) or not node.body or not (
                node.body[0].lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        for item in node.items:
            call = item.context_expr
            if isinstance(call, ast.Call) and _opener(call) and _same_path(call, tainted) and \
                    isinstance(item.optional_vars, ast.Name) and not _on(call, line):
                handle = item.optional_vars.id
                if any(_reads_at(s, handle, tainted) for s in node.body):
                    return True
    return False


def _opened_once(fn: ast.FunctionDef | ast.AsyncFunctionDef, stmt: ast.stmt) -> bool:
    """`self.con = sqlite3.connect(self.db)` under `if self.con is None:`: the handle opened on
    first use and kept, the fix itself, not a file opened for every sample."""
    if not isinstance(stmt, ast.Assign) or not all(isinstance(t, ast.Attribute) for t in stmt.targets):
        return False
    kept = {ast.unparse(t) for t in stmt.targets}
    return any(isinstance(n, ast.If) and any(s is stmt for s in n.body)
               and any(k in ast.unparse(n.test) for k in kept) for n in ast.walk(fn))


def _handles(fn: ast.FunctionDef | ast.AsyncFunctionDef, tainted: set[str]) -> dict[str, ast.Call]:
    """The function's local names bound to a file it opens by a path that does not depend on the
    sample (`con = sqlite3.connect(self.db)`); a handle kept on `self` is opened once, not here."""
    out: dict[str, ast.Call] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and _opener(n.value) \
                and _same_path(n.value, tainted):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = n.value
    return out
