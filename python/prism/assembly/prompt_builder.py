"""The default prompt builder: adds context blocks and selected skills to the
assembled messages as system text. Tools are passed through untouched; the
host's active tool list is the only source of provider tools."""

from __future__ import annotations

from collections.abc import Sequence

from prism.assembly.context import ContextBlock, render_context_block
from prism.assembly.groups import skill_message, text_message
from prism.assembly.skills import Skill
from prism.contracts import Message, ToolDeclaration


class DefaultPromptBuilder:
    """Context and skill messages go right after the leading system messages
    (instructions and summaries), before history, so the stable prefix stays
    first. Messages are not copied or mutated."""

    name = "default-prompt"

    async def build(
        self,
        messages: Sequence[Message],
        *,
        context_blocks: Sequence[ContextBlock] = (),
        skills: Sequence[Skill] = (),
        tools: Sequence[ToolDeclaration] = (),
    ) -> list[Message]:
        extra = [text_message("system", render_context_block(block)) for block in context_blocks]
        extra.extend(skill_message(skill) for skill in skills)
        if not extra:
            return list(messages)
        split = 0
        while split < len(messages) and messages[split].get("role") == "system":
            split += 1
        return [*messages[:split], *extra, *messages[split:]]


def create_default_prompt_builder() -> DefaultPromptBuilder:
    return DefaultPromptBuilder()
