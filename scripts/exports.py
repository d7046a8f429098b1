"""One export list per lazy package: ``_EXPORTS`` (name -> defining module).

Each lazy ``__init__`` (``prism._lazy.attach``) needs three spellings of the
same list: ``_EXPORTS`` for the runtime, an ``if TYPE_CHECKING:`` import
block for type checkers, and ``__all__``. Only ``_EXPORTS`` is written by
hand; this script writes the other two from it, and
tests/test_lazy_exports.py fails when a package is out of date.

    python scripts/exports.py          # rewrite every lazy package in place
    python scripts/exports.py --check  # list the stale ones, exit 1 if any
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "python"


def lazy_packages() -> list[Path]:
    return sorted(
        path
        for path in ROOT.glob("prism/**/__init__.py")
        if "from prism._lazy import attach" in path.read_text(encoding="utf-8")
    )


def _all_order(name: str) -> tuple[int, str]:
    # ruff's RUF022 ("isort-style"): CONSTANTS, then Classes, then the rest.
    if name.isupper() or re.fullmatch(r"[A-Z0-9_]+", name):
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def _type_checking_block(exports: dict[str, str]) -> str:
    by_module: dict[str, list[str]] = {}
    for name, module in exports.items():
        by_module.setdefault(module, []).append(name)
    lines = ["if TYPE_CHECKING:"]
    for module in sorted(by_module):
        names = "".join(f"        {n},\n" for n in sorted(by_module[module], key=_all_order))
        lines.append(f"    from {module} import (\n{names}    )")
    return "\n".join(lines) + "\n"


def render(source: str) -> str:
    """``source`` with its TYPE_CHECKING block and ``__all__`` regenerated."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    exports: dict[str, str] | None = None
    spans: dict[str, tuple[int, int]] = {}
    extras: list[str] = []
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        name = target.id if isinstance(target, ast.Name) else None
        if name == "_EXPORTS" and node.value is not None:  # type: ignore[union-attr]
            exports = ast.literal_eval(node.value)  # type: ignore[union-attr]
        elif name == "__all__":
            spans["all"] = (node.lineno, node.end_lineno or node.lineno)
            value = ast.literal_eval(node.value)  # type: ignore[union-attr]
            extras = [n for n in value if n.startswith("__")]  # __version__
        elif (
            isinstance(node, ast.If)
            and ast.unparse(node.test) == "TYPE_CHECKING"
            and "tc" not in spans
        ):
            spans["tc"] = (node.lineno, node.end_lineno or node.lineno)
    if exports is None or "tc" not in spans or "all" not in spans:
        raise SystemExit("a lazy package needs _EXPORTS, an if TYPE_CHECKING block and __all__")
    names = sorted([*exports, *extras], key=_all_order)
    all_block = "__all__ = [\n" + "".join(f'    "{n}",\n' for n in names) + "]\n"
    replacements = sorted(
        [(spans["tc"], _type_checking_block(exports)), (spans["all"], all_block)], reverse=True
    )
    for (start, end), text in replacements:
        lines[start - 1 : end] = [text]
    return "".join(lines)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path in lazy_packages():
        source = path.read_text(encoding="utf-8")
        wanted = render(source)
        if wanted != source:
            stale.append(path.relative_to(ROOT.parent).as_posix())
            if not check:
                path.write_text(wanted, encoding="utf-8")
    for path in stale:
        print(("stale: " if check else "rewrote: ") + path)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
