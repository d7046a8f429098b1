"""``create_coding_compaction_strategy``: the default summary plus what a
coding session needs to carry on after compaction.

It appends a bounded "Coding state" section built from the folded entries'
tool calls and results: paths touched (read/write/edit ``path`` arguments,
newest first, capped), the intent of each change (``edit``/``write`` by
path and size, never the diff or the content), checks run and their
outcome (``check`` results: name, passed, diagnostic count), the plan/todo
state and blockers (from ``CodingState``), and the next verification step.
Raw command output, file content and diffs never enter the summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prism.coding.plan import CodingState
from prism.compaction.default import DefaultCompactionStrategy, create_default_compaction_strategy
from prism.compaction.options import CompactionContext, CompactionResult
from prism.contracts import SessionEntry

_PATH_TOOLS = {"read": "read", "write": "wrote", "edit": "edited"}


def _blocks(entries: Sequence[SessionEntry]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for entry in entries:
        if entry.get("kind") != "message":
            continue
        message: Any = entry.get("message", {})
        for block in message.get("content", []):
            if isinstance(block, Mapping):
                out.append(block)
    return out


def coding_state_lines(
    entries: Sequence[SessionEntry],
    plan: Mapping[str, Any] | None,
    *,
    max_paths: int = 20,
    max_checks: int = 10,
) -> list[str]:
    """The "Coding state" section (bounded; see the module docstring)."""
    touched: dict[str, str] = {}
    checks: list[str] = []
    last_failed: str | None = None
    for block in _blocks(entries):
        if block.get("type") == "tool_call" and block.get("name") in _PATH_TOOLS:
            path = block.get("arguments", {}).get("path")
            if isinstance(path, str):
                verb = _PATH_TOOLS[str(block["name"])]
                if verb != "read" or path not in touched:
                    touched.pop(path, None)
                    touched[path] = verb
        elif block.get("type") == "tool_result" and block.get("name") == "check":
            result = block.get("result")
            if isinstance(result, Mapping) and "name" in result:
                ok = bool(result.get("passed"))
                checks.append(
                    f"{result['name']}: {'passed' if ok else 'failed'}"
                    f" ({result.get('diagnostic_count', 0)} diagnostics)"
                )
                last_failed = None if ok else str(result["name"])
    lines = ["Coding state:"]
    recent = list(touched.items())[-max_paths:][::-1]
    if recent:
        lines.append("- paths: " + ", ".join(f"{p} ({v})" for p, v in recent))
        changed = [p for p, v in recent if v != "read"]
        if changed:
            lines.append("- changed: " + ", ".join(changed))
    if checks:
        lines.append("- checks: " + "; ".join(checks[-max_checks:]))
    plan = plan or {}
    for item in plan.get("todos", [])[:20]:
        lines.append(f"- todo [{item['status']}] {item['content']}")
    for blocker in plan.get("blockers", [])[:10]:
        lines.append(f"- blocker: {blocker}")
    next_check = plan.get("nextCheck") or (f"re-run check {last_failed!r}" if last_failed else None)
    if next_check:
        lines.append(f"- next verification: {next_check}")
    return lines if len(lines) > 1 else []


def _without_old_section(summary: str) -> str:
    """The summary without an earlier "Coding state" block: the new one is
    rebuilt from the whole branch, so carrying the old one would repeat it."""
    kept: list[str] = []
    skipping = False
    for line in summary.split("\n"):
        if line == "Coding state:":
            skipping = True
            continue
        if skipping and line.startswith("- "):
            continue
        skipping = False
        kept.append(line)
    return "\n".join(kept).strip("\n")


class CodingCompactionStrategy:
    """Built by :func:`create_coding_compaction_strategy`."""

    __slots__ = ("base", "max_paths", "name", "state")

    def __init__(
        self,
        base: DefaultCompactionStrategy,
        state: CodingState | None,
        max_paths: int,
        name: str,
    ) -> None:
        self.base = base
        self.state = state
        self.max_paths = max_paths
        self.name = name

    async def compact(self, context: CompactionContext) -> CompactionResult:
        result = await self.base.compact(context)
        plan = self.state.for_session(context.session_id) if self.state is not None else None
        extra = coding_state_lines(context.entries, plan, max_paths=self.max_paths)
        if not extra:
            return result
        # Masked with the agent's redactor, like every strategy's output.
        section = context.redactor.redact_text("\n".join(extra))
        base = _without_old_section(result.summary)
        summary = base + ("\n\n" if base else "") + section
        entries: list[dict[str, Any]] = [dict(e) for e in result.entries]
        for entry in entries:
            if entry.get("kind") == "compaction":
                entry["summary"] = summary
        return CompactionResult(summary=summary, entries=entries)  # type: ignore[arg-type]


def create_coding_compaction_strategy(
    *,
    state: CodingState | None = None,
    name: str = "coding",
    keep_recent_entries: int = 8,
    max_summary_chars: int = 12_000,
    max_paths: int = 20,
) -> CodingCompactionStrategy:
    """The default strategy's summary plus the coding state section."""
    base = create_default_compaction_strategy(
        name=name,
        keep_recent_entries=keep_recent_entries,
        max_summary_chars=max_summary_chars,
    )
    return CodingCompactionStrategy(base, state, max_paths, name)
