"""No import circles inside ``prism``.

A tiny AST scan of python/prism: an edge A -> B for every module-level
``import``/``from ... import`` in A that names module B (``from pkg import
name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``).
Imports under ``if TYPE_CHECKING:`` and inside functions are not edges: they
run later, never while the importing module is half-initialised.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "python"
PACKAGE = "prism"


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


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append(node)
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.With):
                visit(node.body)
            # def/class bodies run later (functions) or are rare enough
            # (class-level imports) to leave out.

    visit(tree.body)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        if path.suffix == ".pyi":
            continue
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _module_level_imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base_parts = name.split(".")
                    if not is_package:
                        base_parts = base_parts[:-1]
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join([*base_parts, *([node.module] if node.module else [])])
                else:
                    base = node.module or ""
                targets = []
                for alias in node.names:
                    candidate = f"{base}.{alias.name}"
                    targets.append(candidate if candidate in modules else base)
            for target in targets:
                if target in modules and target != name:
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


def test_the_scan_finds_a_cycle_and_ignores_deferred_imports(tmp_path: Path) -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "import prism.b\n"
        "if TYPE_CHECKING:\n    import prism.c\n"
        "def later():\n    import prism.d\n"
    )
    imported = [
        alias.name
        for node in _module_level_imports(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    assert imported == ["prism.b"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("importer", ["prism.runtime.loop", "prism.runtime.turn"])
def test_only_agent_imports_session(importer: str) -> None:
    graph = import_graph()
    importers = {name for name, targets in graph.items() if "prism.runtime.session" in targets}
    assert importers <= {"prism.runtime.agent", "prism.runtime"}
    assert "prism.runtime.session" not in graph[importer]
