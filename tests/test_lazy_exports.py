"""Lazily exported names: every package's ``__all__`` resolves, the lazy
table and the type checker's imports agree, and importing a package loads
none of what it re-exports."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1] / "python"
LAZY = sorted(
    str(path.parent.relative_to(ROOT)).replace("/", ".")
    for path in ROOT.glob("prism/**/__init__.py")
    if "from prism._lazy import attach" in path.read_text()
)


def test_the_packages_are_lazy() -> None:
    assert {"prism", "prism.compaction", "prism.runtime", "prism.stores"} <= set(LAZY)


def _type_checking_imports(package: str) -> dict[str, str]:
    path = ROOT / package.replace(".", "/") / "__init__.py"
    tree = ast.parse(path.read_text())
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    names: dict[str, str] = {}
    for node in block.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                names[alias.name] = node.module
    return names


@pytest.mark.parametrize("package", LAZY)
def test_exports_resolve_and_match_the_type_checking_block(package: str) -> None:
    module = importlib.import_module(package)
    exports: dict[str, str] = module._EXPORTS
    checked = _type_checking_imports(package)
    submodules = {n for n, m in exports.items() if m == f"{package}.{n}"}
    assert {n: m for n, m in exports.items() if n not in submodules} == {
        n: m for n, m in checked.items() if n not in submodules
    }
    assert set(module.__all__) - {"__version__"} <= set(exports)
    for name in set(module.__all__) - {"__version__"}:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        module.not_a_name  # noqa: B018


def test_importing_prism_loads_no_capability() -> None:
    code = (
        "import sys, prism, prism.compaction, prism.stores;"
        "print(sorted(m for m in sys.modules if m.startswith('prism')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['prism', 'prism._lazy', 'prism.compaction', 'prism.stores']"


def test_pydantic_is_loaded_only_for_tools_built_from_functions() -> None:
    """pydantic builds typed tools' schemas; neither ``import prism`` nor
    ``prism -p hi`` (the CLI's hot path) may pay for importing it."""
    code = """
import sys
import prism
assert "pydantic" not in sys.modules, "import prism"
from prism.cli import main
assert main(["-p", "hi"]) == 0
sys.stdout.flush()
assert "pydantic" not in sys.modules, "prism -p hi"
prism.define_tool(lambda args, ctx: 1, name="raw")
assert "pydantic" not in sys.modules, "an (args, ctx) tool"
def add(a: int) -> int:
    return a
prism.define_tool(add)
print("\\npydantic loaded:", "pydantic" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    answer, loaded = done.stdout.strip().splitlines()
    assert answer.startswith("Mock reply to: hi") and loaded == "pydantic loaded: True"


def _exports_script() -> object:
    import importlib.util

    path = ROOT.parent / "scripts" / "exports.py"
    spec = importlib.util.spec_from_file_location("prism_exports_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("package", LAZY)
def test_type_checking_block_and_all_are_generated_from_exports(package: str) -> None:
    """``_EXPORTS`` is the one list written by hand; `make exports`
    (scripts/exports.py) writes the TYPE_CHECKING block and ``__all__``."""
    script: Any = _exports_script()
    path = ROOT / package.replace(".", "/") / "__init__.py"
    source = path.read_text(encoding="utf-8")
    assert script.render(source) == source, f"{package} is stale: run `make exports`"


def test_a_name_added_only_to_exports_is_caught() -> None:
    script: Any = _exports_script()
    source = (ROOT / "prism" / "durable" / "__init__.py").read_text(encoding="utf-8")
    edited = source.replace(
        "_EXPORTS: dict[str, str] = {", '_EXPORTS: dict[str, str] = {\n    "Extra": "prism.x",', 1
    )
    rendered = script.render(edited)
    assert rendered != edited
    assert '"Extra",' in rendered and "from prism.x import (\n        Extra,\n    )" in rendered
