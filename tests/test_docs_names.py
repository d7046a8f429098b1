"""Every public name the docs mention exists: each ``from prism... import X``
and each dotted ``prism.x.Name`` in docs/*.md and the README resolves, so a
rename or removal that forgets the docs fails here instead of in a reader's
editor."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FROM_IMPORT = re.compile(r"from\s+(prism(?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n]+)")
# A dotted reference, not part of a longer word, a path or a quoted string
# (``"prism.attention_frontier"`` is a customType, not a name).
DOTTED = re.compile(r"(?<![\w\"'./-])prism(?:\.[A-Za-z_]\w*)+")
# OpenTelemetry attribute names (docs/telemetry.md) that share a prefix with a
# module; they name span attributes, not Python objects.
TELEMETRY_NAMES = {
    "prism.attention.cache_busts",
    "prism.attention.gate",
    "prism.attention.trips",
    "prism.attention.used",
    "prism.compaction.entry_id",
    "prism.compaction.trigger",
    "prism.retry.attempt",
    "prism.retry.delay_ms",
    "prism.tool.duration",
    "prism.tool.unregistered",
}


def imported_names(clause: str) -> list[str]:
    clause = re.sub(r"#.*", "", clause).strip().strip("()")
    names = []
    for part in clause.split(","):
        name = part.split(" as ")[0].strip()
        if re.fullmatch(r"[A-Za-z_]\w*", name):
            names.append(name)
    return names


def references(text: str) -> set[str]:
    found: set[str] = set()
    for module, clause in FROM_IMPORT.findall(text):
        found.update(f"{module}.{name}" for name in imported_names(clause))
    # A dotted name whose first part is no module or top-level name of prism
    # is a wire string (a customType, a signature prefix, a metric name).
    found.update(
        name
        for name in DOTTED.findall(text)
        if name not in TELEMETRY_NAMES and resolves(".".join(name.split(".")[:2]))
    )
    return found


def resolves(dotted: str) -> bool:
    """Import the longest module prefix, then walk attributes for the rest."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_checker_catches_a_stale_name() -> None:
    text = "```python\nfrom prism.runtime import create_agent, NoSuchThing\n```\nsee `prism.tools.gone`"
    refs = references(text)
    assert {"prism.runtime.create_agent", "prism.runtime.NoSuchThing", "prism.tools.gone"} <= refs
    assert [r for r in sorted(refs) if not resolves(r)] == [
        "prism.runtime.NoSuchThing",
        "prism.tools.gone",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_documented_name_exists(page: Path) -> None:
    missing = sorted(r for r in references(page.read_text(encoding="utf-8")) if not resolves(r))
    assert not missing, f"{page.name} mentions names that do not exist: {missing}"
