"""No import circles inside ``prism``, not even deferred ones.

A tiny AST scan of python/prism: an edge A -> B for every ``import`` /
``from ... import`` in A that names module B, wherever it sits (module
level, inside a function or a class), and for every
``importlib.import_module("literal")`` call. ``from pkg import name`` is an
edge to ``pkg.name`` when that is a module, to the module that defines
``name`` when ``pkg`` exports it lazily (its ``_EXPORTS`` table), else to
``pkg``. Only imports under ``if TYPE_CHECKING:`` are left out: they never
run. An import inside a function still runs while both modules are in use,
so a circle through one is still a circle (and a layering knot).

``ALLOWED`` may list an edge that closes a circle only for an optional extra
loaded lazily, each with its reason; it is empty today.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "python"
PACKAGE = "prism"

# (importer, imported) -> why the circle is acceptable. Optional extras only.
ALLOWED: dict[tuple[str, str], str] = {}


def module_names() -> dict[str, Path]:
    names: dict[str, Path] = {}
    for path in (ROOT / PACKAGE).rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    # Extension modules (prism._native) are modules too, with no imports to scan.
    for stub in (ROOT / PACKAGE).rglob("*.pyi"):
        name = ".".join(stub.relative_to(ROOT).with_suffix("").parts)
        names.setdefault(name, stub)
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_import_module(node: ast.Call) -> bool:
    func = node.func
    named = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module"
    )
    return named and bool(node.args) and isinstance(node.args[0], ast.Constant)


def counted_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom | ast.Call]:
    """Every import statement and literal ``import_module`` call in ``tree``,
    at any depth, except those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom | ast.Call] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.Call) and _is_import_module(node):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _lazy_exports(path: Path) -> dict[str, str]:
    """A package's ``_EXPORTS`` table (name -> defining module), if it has one."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.AnnAssign | ast.Assign)
            and "_EXPORTS" in ast.unparse(node).split(":")[0].split("=")[0]
            and node.value is not None
        ):
            table = ast.literal_eval(node.value)
            assert isinstance(table, dict)
            return table
    return {}


def _targets(
    name: str,
    path: Path,
    node: ast.Import | ast.ImportFrom | ast.Call,
    modules: dict[str, Path],
    lazy: dict[str, dict[str, str]],
) -> list[str]:
    if isinstance(node, ast.Call):
        value = node.args[0]
        assert isinstance(value, ast.Constant)
        return [str(value.value)]
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base_parts = name.split(".")
        if path.name != "__init__.py":
            base_parts = base_parts[:-1]
        base_parts = base_parts[: len(base_parts) - (node.level - 1)]
        base = ".".join([*base_parts, *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    targets = []
    for alias in node.names:
        candidate = f"{base}.{alias.name}"
        if candidate in modules:
            targets.append(candidate)
        else:
            targets.append(lazy.get(base, {}).get(alias.name, base))
    return targets


@functools.cache
def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    lazy = {
        name: _lazy_exports(path) for name, path in modules.items() if path.name == "__init__.py"
    }
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        if path.suffix == ".pyi":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in counted_imports(tree):
            for target in _targets(name, path, node, modules, lazy):
                if target in modules and target != name and (name, target) not in ALLOWED:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = walk(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = walk(node)
            if found:
                return found
    return None


def test_the_prism_import_graph_has_no_cycles() -> None:
    graph = import_graph()
    assert len(graph) > 50 and graph["prism.runtime.agent"]  # the scan sees the package
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_scan_counts_deferred_imports_and_skips_type_checking() -> None:
    tree = ast.parse(
        "import importlib\n"
        "from typing import TYPE_CHECKING\n"
        "import prism.b\n"
        "if TYPE_CHECKING:\n    import prism.c\n"
        "def later():\n    import prism.d\n"
        "    return importlib.import_module('prism.e')\n"
        "class Late:\n    from prism import f\n"
    )
    seen = [ast.unparse(node) for node in counted_imports(tree)]
    assert seen == [
        "import importlib",
        "from typing import TYPE_CHECKING",
        "import prism.b",
        "import prism.d",
        "importlib.import_module('prism.e')",
        "from prism import f",
    ]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_a_lazy_export_is_an_edge_to_its_defining_module() -> None:
    modules = module_names()
    lazy = {"prism.runtime": _lazy_exports(modules["prism.runtime"])}
    node = ast.parse("from prism.runtime import create_agent, not_exported").body[0]
    assert isinstance(node, ast.ImportFrom)
    targets = _targets("prism.x", Path("x.py"), node, modules, lazy)
    assert targets == [lazy["prism.runtime"]["create_agent"], "prism.runtime"]
    assert targets[0].startswith("prism.runtime.")


@pytest.mark.parametrize("edge", sorted(ALLOWED))
def test_every_allowed_edge_exists_and_says_why(edge: tuple[str, str]) -> None:
    importer, imported = edge
    assert ALLOWED[edge].strip()
    tree = ast.parse(module_names()[importer].read_text(encoding="utf-8"))
    modules = module_names()
    named = {
        target
        for node in counted_imports(tree)
        for target in _targets(importer, modules[importer], node, modules, {})
    }
    assert imported in named, f"stale allowlist entry {edge}"


@pytest.mark.parametrize("importer", ["prism.runtime.loop", "prism.runtime.turn"])
def test_only_agent_imports_session(importer: str) -> None:
    graph = import_graph()
    # Above the runtime (the CLI, telemetry) a module may use AgentSession;
    # inside it, nothing below the session imports it.
    importers = {
        name
        for name, targets in graph.items()
        if "prism.runtime.session" in targets and name.startswith("prism.runtime")
    }
    assert importers <= {"prism.runtime.agent", "prism.runtime"}
    assert "prism.runtime.session" not in graph[importer]


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@pytest.mark.parametrize(
    ("below", "above"),
    [
        ("prism.compaction", "prism.runtime"),
        ("prism.compaction", "prism.memory"),
        ("prism.runtime", "prism.memory"),
    ],
)
def test_layers_only_point_down(below: str, above: str) -> None:
    """Nothing in ``below`` reaches ``above``, directly or through other
    modules, counting imports inside functions: observational memory is an
    application on the runtime, and compaction is a layer under it."""
    graph = import_graph()
    for name in sorted(graph):
        if name == below or name.startswith(below + "."):
            reached = {
                m for m in _reachable(graph, name) if m == above or m.startswith(above + ".")
            }
            assert not reached, f"{name} reaches {sorted(reached)}"
