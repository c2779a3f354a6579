"""A line of the user's code that asks autograd for a gradient it can differentiate again
(`torch.autograd.grad(..., create_graph=True)`: a WGAN-GP gradient penalty, a Hessian-vector
product, MAML's inner step; `loss.backward(create_graph=True)`), read from the source.

torch.compile's compiled backward cannot itself be differentiated: torch 2.13 stops the run at the
first such step with "torch.compile with aot_autograd does not currently support double backward"
(seen here on a WGAN-GP loop with its critic compiled). A fix offering torch.compile there would end
the user's run, so it is offered only on the modules that gradient does not pass through, with the
line named. The source is read (the script and the file of the model's call), not autograd.grad
wrapped: nothing in the run changes for it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from gpubottle.analysis.loop_source import parsed_files


def _differentiable(call: ast.Call) -> bool:
    """create_graph= given and not False or None (a variable may be True: said as such)."""
    for k in call.keywords:
        if k.arg == "create_graph":
            return not (isinstance(k.value, ast.Constant) and k.value.value in (False, None))
    return False


def double_backward(files: Iterable[str | None], cwd: str | None) -> str | None:
    """`file:line` of the first call with create_graph in `files` (as the report names them,
    relative to `cwd`), None where none has one."""
    for file, tree in parsed_files(files, cwd):
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _differentiable(n)]
        if calls:
            return f"{file}:{min(c.lineno for c in calls)}"
    return None
