"""The optional exact-id ``recall`` tool."""

from __future__ import annotations

from typing import Any

from prism.compaction.observational_memory.ids import require_memory_id
from prism.errors import ConfigError
from prism.memory._entries import (
    GetEntries,
    check_get_entries,
    load_entries,
)
from prism.memory.recall import recall_observational_memory
from prism.security.redaction import SecretRedactor, require_redactor
from prism.tools.definition import ToolContext, ToolDefinition, define_tool

RECALL_TOOL_NAME = "recall"
RECALL_TOOL_DESCRIPTION = (
    "Recall the evidence behind one memory by its exact 12-character id (shown as [id] in "
    "the memory summary): the memory, the observations a reflection consolidates, and the "
    "session entries they cite. It does not search by topic."
)


def create_recall_memory_tool(
    get_entries: GetEntries, *, name: str = RECALL_TOOL_NAME, redactor: SecretRedactor
) -> ToolDefinition:
    """A ``ToolDefinition`` taking ``{"id": "<12 hex>"}``. ``get_entries(session_id)``
    (sync or async) supplies the calling session's current branch. A malformed
    id fails before ``get_entries`` is called. The result value is
    ``{"text": ..., "details": recall JSON}``, redacted with ``secrets``."""
    check_get_entries(get_entries, "create_recall_memory_tool")
    redactor = require_redactor(redactor, owner="create_recall_memory_tool")

    async def execute(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        memory_id = require_memory_id(args.get("id"), "recall id")
        if ctx.session_id is None:
            raise ConfigError("recall needs the calling session's id")
        entries = await load_entries(get_entries, ctx.session_id)
        recall = recall_observational_memory(entries, memory_id, redactor=redactor)
        return {"text": recall.to_text(), "details": recall.to_json()}

    return define_tool(
        name,
        execute,
        description=RECALL_TOOL_DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "A memory id: 12 lowercase hex characters."}
            },
            "required": ["id"],
            "additionalProperties": False,
        },
    )
