"""Rendering prepared memory as the text a model reads (a compaction summary)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prism.security.redaction import SecretRedactor, require_redactor

REFLECTIONS_HEADING = "Reflections (consolidated memory):"
OBSERVATIONS_HEADING = "Observations (source-backed memory):"
RECALL_HINT = "Each memory starts with its [id]; the recall tool returns its evidence."


def render_observational_memory(
    reflections: Sequence[Mapping[str, Any]],
    observations: Sequence[Mapping[str, Any]],
    *,
    redactor: SecretRedactor,
) -> str:
    """Reflections, then observations, one ``- [id] content`` line each, in
    the order given. Empty memory renders as ``""``. Exact ``secrets`` are
    redacted from the result. O(n) in the memories' size."""
    lines: list[str] = []
    if reflections:
        lines.append(REFLECTIONS_HEADING)
        lines.extend(f"- [{r['id']}] {_one_line(r['content'])}" for r in reflections)
    if observations:
        if lines:
            lines.append("")
        lines.append(OBSERVATIONS_HEADING)
        lines.extend(f"- [{o['id']}] {_one_line(o['content'])}" for o in observations)
    if not lines:
        return ""
    lines.append("")
    lines.append(RECALL_HINT)
    text = "\n".join(lines)
    redactor = require_redactor(redactor, owner="render_observational_memory")
    return redactor.redact_text(text) if len(redactor) else text


def _one_line(text: str) -> str:
    # A memory is one line of the summary; embedded newlines would let its
    # content pose as another memory's id line.
    return " ".join(text.split()) if "\n" in text or "\r" in text else text
