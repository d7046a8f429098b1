"""Input and prompt assembly: messages, context, skills and system prompts in,
one ``ProviderRequest`` out. No provider calls, no discovery, no I/O of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.assembly.assemble import (
        InputBuilder,
        PromptBuilder,
        assemble_provider_input,
        normalize_tools,
    )
    from prism.assembly.context import (
        ContextBlock,
        ContextProvider,
        ContextRequest,
        render_context_block,
        resolve_context_providers,
    )
    from prism.assembly.groups import (
        MessageGroups,
        build_message_groups,
        compose_messages,
        place_tool_results,
        text_message,
        tool_result_message,
    )
    from prism.assembly.input_builder import (
        DefaultInputBuilder,
        InputAttachment,
        LoadedResource,
        ResourceLoader,
        create_default_input_builder,
    )
    from prism.assembly.prompt_builder import (
        DefaultPromptBuilder,
        create_default_prompt_builder,
    )
    from prism.assembly.skills import (
        Skill,
    )
    from prism.assembly.system import (
        PromptInstruction,
        SystemPromptLayer,
        compose_system_prompt,
        render_system_prompt,
    )
    from prism.assembly.templates import (
        render_prompt_template,
        template_variables,
    )

_EXPORTS: dict[str, str] = {
    "InputBuilder": "prism.assembly.assemble",
    "PromptBuilder": "prism.assembly.assemble",
    "assemble_provider_input": "prism.assembly.assemble",
    "normalize_tools": "prism.assembly.assemble",
    "ContextBlock": "prism.assembly.context",
    "ContextProvider": "prism.assembly.context",
    "ContextRequest": "prism.assembly.context",
    "render_context_block": "prism.assembly.context",
    "resolve_context_providers": "prism.assembly.context",
    "MessageGroups": "prism.assembly.groups",
    "build_message_groups": "prism.assembly.groups",
    "compose_messages": "prism.assembly.groups",
    "place_tool_results": "prism.assembly.groups",
    "text_message": "prism.assembly.groups",
    "tool_result_message": "prism.assembly.groups",
    "DefaultInputBuilder": "prism.assembly.input_builder",
    "InputAttachment": "prism.assembly.input_builder",
    "LoadedResource": "prism.assembly.input_builder",
    "ResourceLoader": "prism.assembly.input_builder",
    "create_default_input_builder": "prism.assembly.input_builder",
    "DefaultPromptBuilder": "prism.assembly.prompt_builder",
    "create_default_prompt_builder": "prism.assembly.prompt_builder",
    "Skill": "prism.assembly.skills",
    "PromptInstruction": "prism.assembly.system",
    "SystemPromptLayer": "prism.assembly.system",
    "compose_system_prompt": "prism.assembly.system",
    "render_system_prompt": "prism.assembly.system",
    "render_prompt_template": "prism.assembly.templates",
    "template_variables": "prism.assembly.templates",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "ContextBlock",
    "ContextProvider",
    "ContextRequest",
    "DefaultInputBuilder",
    "DefaultPromptBuilder",
    "InputAttachment",
    "InputBuilder",
    "LoadedResource",
    "MessageGroups",
    "PromptBuilder",
    "PromptInstruction",
    "ResourceLoader",
    "Skill",
    "SystemPromptLayer",
    "assemble_provider_input",
    "build_message_groups",
    "compose_messages",
    "compose_system_prompt",
    "create_default_input_builder",
    "create_default_prompt_builder",
    "normalize_tools",
    "place_tool_results",
    "render_context_block",
    "render_prompt_template",
    "render_system_prompt",
    "resolve_context_providers",
    "template_variables",
    "text_message",
    "tool_result_message",
]
