"""A model the step calls that is TorchScript: the line of the user's file that made it, read from
the source (torch.jit.script(Net()), torch.jit.trace(model, example)).

torch.compile refuses a TorchScript module (torch 2.13: "torch.compile does not support compiling
torch.jit.script or torch.jit.freeze models directly"), so a fix offering `model =
torch.compile(model)` there would stop the user's run at its first line: the fix compiles the
eager module the line started from. The source is read, not the call wrapped: torch.jit.script
finds a scripted class's names in its caller's frame, which a wrapper would move.
"""

from __future__ import annotations

import ast
import os

from gpubottle.analysis.loop_source import dotted, parent_map, parsed
from gpubottle.evidence import Scripted

# The classes torch gives a module torch.jit.script or torch.jit.trace made (torch/jit/_script.py,
# torch/jit/_trace.py), as the model-calls probe records them.
SCRIPT_CLASSES = frozenset({"RecursiveScriptModule", "ScriptModule", "TopLevelTracedModule",
                            "TracedModule"})
_MAKERS = {"script": "torch.jit.script", "trace": "torch.jit.trace", "trace_module": "torch.jit.trace"}


def _maker(call: ast.Call) -> str | None:
    """torch.jit.script / torch.jit.trace for `torch.jit.script(...)`, `jit.trace(...)`."""
    name = dotted(call.func)
    last = name.rsplit(".", 1)[-1]
    return _MAKERS.get(last) if name.endswith(f"jit.{last}") else None


def _target(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        node = node.targets[0]
    elif isinstance(node, ast.AnnAssign):
        node = node.target
    else:
        return None
    return dotted(node) or None if isinstance(node, (ast.Name, ast.Attribute)) else None


def scripted(module_class: str | None, site: str | None, cwd: str | None,
             names: list[str] | None = None) -> Scripted | None:
    """Where `module_class` (the module the counted step called) is TorchScript: the call in the
    file of `site` (the line that called it) that made it, one assigning to a name the step calls
    it by (`names`) first. Its line unknown (made in another file, a notebook): how is "TorchScript"
    and the rest None."""
    if module_class not in SCRIPT_CLASSES:
        return None
    unknown = Scripted("TorchScript", None, None, None)
    file = site.rsplit(":", 1)[0] if site and not site.startswith("cell [") else None
    found = parsed(os.path.join(cwd or "", file)) if file else None
    if found is None:
        return unknown
    source, tree = found
    parents = parent_map(tree)
    made = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (how := _maker(node)) is not None:
            eager = ast.get_source_segment(source, node.args[0]) if node.args else None
            made.append(Scripted(how, f"{file}:{node.lineno}", eager,
                                 _target(parents.get(id(node)))))
    if not made:
        return unknown
    made.sort(key=lambda m: (m.name not in (names or ()), int((m.site or ":0").rsplit(":", 1)[1])))
    return made[0]
