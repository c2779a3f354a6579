"""The code flows one way: collect/probes -> analysis -> evidence -> rules -> report -> render,
commands on top. Every import in the package (function-level ones too) is read from the source;
a cycle between modules, or a stage importing one above it, fails here."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gpubottle"  # tests/unit/ -> the checkout

# Lowest first; a module may import its own stage and the stages below it.
LAYERS: list[tuple[str, ...]] = [
    # words, records, clocks
    ("errors", "serialisable", "jsonio", "vocabulary", "wire", "clock", "wakeups", "units", "stats"),
    ("evidence", "report", "options", "rundir"),  # what is measured and judged, typed
    ("collect", "probes", "trace"),  # measuring (the supervisor's samplers, the script's probes, traces)
    ("launch",),  # starting the script with its probes and the collectors
    ("analysis",),  # measurements -> evidence
    ("rules",),  # evidence -> findings (pure)
    ("sources", "gate", "compare", "trials", "patches", "config_files"),  # saved runs, CI, compare, diffs
    ("render",),  # reports -> text, JSON, HTML (no judging, no collecting)
    # the CLI, profile(), %%gpubottle
    ("commands", "cli", "plain_options", "run_args", "command", "__main__", "api", "ipython"),
]
RANK = {stage: i for i, stages in enumerate(LAYERS) for stage in stages}
# Renderers render: they may read the run's time series for charts, never judge or collect.
RENDER_MAY_NOT = ("rules", "collect", "probes", "launch", "trace", "sources", "trials")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("gpubottle")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("gpubottle"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
    return {m for m in found if m in modules and m != name}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "gpubottle"


@functools.cache  # (parsing the package's ~300 modules: ~1 s of CPU, once for all six reads)
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_stage_is_placed():
    stages = {_stage(m) for m in _graph()} - {"gpubottle"}
    assert stages <= set(RANK), f"place these in LAYERS: {sorted(stages - set(RANK))}"


def test_no_stage_imports_one_above_it():
    upward = []
    for module, deps in _graph().items():
        own = _stage(module)
        for dep in deps:
            other = _stage(dep)
            if other == "gpubottle" or own == "gpubottle":
                continue  # the package's own __init__ (its version)
            if RANK[other] > RANK[own]:
                upward.append(f"{module} -> {dep}")
    assert not upward, "upward imports:\n" + "\n".join(sorted(upward))


def test_renderers_only_render():
    bad = [f"{m} -> {d}" for m, deps in _graph().items() if _stage(m) == "render"
           for d in deps if _stage(d) in RENDER_MAY_NOT]
    assert not bad, "\n".join(sorted(bad))


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep):] + [dep] if dep in path else [node, dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_walk_sees_function_level_imports():
    """A lazy import inside a function is an import: the walk must see it (or a cycle hides there)."""
    deps = _graph()["gpubottle.commands.run"]
    assert "gpubottle.launch.supervisor" in deps
    assert any(d.startswith("gpubottle.") for d in _graph()["gpubottle.cli"])  # imports in functions
