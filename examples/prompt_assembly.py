"""Assemble one provider request from host input, without calling a provider."""

from __future__ import annotations

import json
from typing import Any

import anyio

from prism import create_middleware_registry
from prism.assembly import (
    ContextRequest,
    Skill,
    SystemPromptLayer,
    assemble_provider_input,
    render_prompt_template,
)
from prism.contracts import Message
from prism.security import NOOP_REDACTOR


class ReleaseNotes:
    name = "release-notes"

    def provide(self, request: ContextRequest) -> str:
        return "Version 1.2 ships on Friday."


async def main() -> None:
    prompt = render_prompt_template(
        "Review {{file}} for {{focus}}", {"file": "notes.md", "focus": ["dates"]}
    )
    history: list[Message] = [
        {"role": "user", "content": [{"type": "text", "text": "Open notes.md"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_call",
                    "id": "call_1",
                    "name": "read",
                    "arguments": {"path": "notes.md"},
                }
            ],
        },
    ]
    middleware = create_middleware_registry()

    def try_to_add_a_tool(payload: Any, next: Any) -> Any:
        payload["tools"].append({"name": "shell"})  # ignored: tools stay the host's
        return next(payload)

    middleware.use("prompt_build", try_to_add_a_tool)
    request = await assemble_provider_input(
        model={"provider": "mock", "model": "demo"},
        input=prompt,
        history=history,
        tool_results=[{"toolCallId": "call_1", "name": "read", "value": "# Notes\nShip it."}],
        system_instructions=[
            SystemPromptLayer("run", "Answer in one line."),
            SystemPromptLayer("app", "You review documents."),
        ],
        attachments=[{"name": "style.md", "text": "Prefer ISO dates."}],
        context_providers=[ReleaseNotes()],
        skills=[Skill("review", "Check every date.")],
        tools=[{"name": "read", "description": "Read a file."}],
        middleware=middleware,
        redactor=NOOP_REDACTOR,
    )
    for message in request["messages"]:
        block: Any = message["content"][0]
        print(f"{message['role']:>9}: {json.dumps(block.get('text', block))[:70]}")
    print("tools:", [tool["name"] for tool in request["tools"]])


if __name__ == "__main__":
    anyio.run(main)
