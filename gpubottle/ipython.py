"""IPython and Jupyter: `%load_ext gpubottle`, then `%%gpubottle [options]` around a cell.

    %%gpubottle --json report.json
    for x, y in loader:
        ...

The cell runs in the notebook's own namespace under `gpubottle.profile()`; the report shows inline as
the HTML report (as text in a terminal IPython). Its exceptions reach the notebook as they would
without the magic. The last profile is `_gpubottle` in the namespace (`.report`, `.run_dir`).
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from gpubottle.api import Profile
from gpubottle.options import ProfileOptions


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="%%gpubottle", add_help=False)
    ap.add_argument("--json", help="also write the report JSON here")
    ap.add_argument("--html", help="also write the HTML report here")
    ap.add_argument("--out", help="the run directory (default gpubottle-runs/cell-<time>)")
    ap.add_argument("--name", default="cell")
    ap.add_argument("--no-stacks", action="store_true", help="no py-spy stack sampling")
    ap.add_argument("--no-gpu", action="store_true", help="no NVML sampling")
    return ap


class _Usage(Exception):
    pass


def _options(line: str) -> ProfileOptions:
    ap = _parser()
    ap.error = lambda message: (_ for _ in ()).throw(_Usage(message))  # type: ignore[method-assign]
    a = ap.parse_args(shlex.split(line))
    return ProfileOptions(out=a.out, json=a.json, html=a.html, stacks=not a.no_stacks, gpu=not a.no_gpu,
                          name=a.name)


def gpubottle_cell(shell: Any, line: str, cell: str) -> None:
    try:
        opts = _options(line)
    except _Usage as exc:
        print(f"%%gpubottle: {exc}\n{_parser().format_usage()}")
        return
    source = shell.transform_cell(cell)
    # Cached under the cell's own number: tracebacks and fixes name it "cell [N], line M".
    filename = shell.compile.cache(source, shell.execution_count)
    code = compile(source, filename, "exec")
    p = Profile(opts)
    shell.user_ns["_gpubottle"] = p
    with p:
        exec(code, shell.user_global_ns, shell.user_ns)


def load_ipython_extension(shell: Any) -> None:
    def magic(line: str, cell: str) -> None:
        gpubottle_cell(shell, line, cell)

    magic.__doc__ = __doc__
    shell.register_magic_function(magic, magic_kind="cell", magic_name="gpubottle")
