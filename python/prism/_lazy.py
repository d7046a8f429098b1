"""Names of a package that load on first use (PEP 562).

A package ``__init__`` lists ``name -> defining module`` once, in
``_EXPORTS``, and gets a module ``__getattr__``/``__dir__`` from
:func:`attach`. Its ``if TYPE_CHECKING:`` block (for type checkers) and
``__all__`` are generated from ``_EXPORTS`` by ``make exports``
(scripts/exports.py); tests/test_lazy_exports.py fails when they are stale. This keeps ``import prism``
and the CLI's start-up from importing every capability they never use
(docs/performance.md, "A fast command").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def attach(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module == f"{package}.{name}":  # a submodule exported by name
            value: Any = importlib.import_module(module)
        else:
            value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups never reach this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
