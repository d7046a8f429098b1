"""Input and prompt assembly: messages, context, skills and system prompts in,
one ``ProviderRequest`` out. No provider calls, no discovery, no I/O of its own."""

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
from prism.assembly.prompt_builder import DefaultPromptBuilder, create_default_prompt_builder
from prism.assembly.skills import Skill
from prism.assembly.system import (
    PromptInstruction,
    SystemPromptLayer,
    compose_system_prompt,
    render_system_prompt,
)
from prism.assembly.templates import render_prompt_template, template_variables

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
