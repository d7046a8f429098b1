"""``assemble_provider_input``: host input -> one ``ProviderRequest``, no provider call.

Stages, in order:

1. input: the default groups (or a custom ``input_builder``);
2. attention (only when ``attention_compiler`` is set): ``compile_attention``
   may shrink history/tool results; ``on_attention_report`` fires on a mutated turn;
3. ``input_assembly`` middleware on the composed messages;
4. context providers in order, then ``context`` middleware on the blocks;
5. the prompt builder adds context and skills; ``prompt_build`` middleware
   sees ``{"messages", "context", "skills", "tools"}`` and may edit messages;
6. the request's ``tools`` are always the host's active tools, whatever
   middleware returned: middleware cannot grant a tool;
7. with the gate on, ``metadata["stablePrefixMessages"]`` says how many
   leading messages are unchanged since the session's previous request
   (``prism.contracts.STABLE_PREFIX_METADATA``), for cache breakpoints.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from prism.assembly.context import (
    ContextBlock,
    ContextProvider,
    ContextRequest,
    resolve_context_providers,
    run_context_middleware,
)
from prism.assembly.groups import MessageGroups, check_message, compose_messages
from prism.assembly.input_builder import (
    DefaultInputBuilder,
    InputAttachment,
    ResourceLoader,
    run_input_assembly,
)
from prism.assembly.prompt_builder import DefaultPromptBuilder
from prism.assembly.skills import Skill
from prism.contracts import (
    STABLE_PREFIX_METADATA,
    Message,
    ModelConfig,
    ProviderRequest,
    ToolDeclaration,
    ToolResult,
)
from prism.errors import ConfigError
from prism.middleware import MiddlewareRegistry, PromptBuildPayload
from prism.security.redaction import SecretRedactor, require_redactor


class InputBuilder(Protocol):
    async def build(self, input: Any = None, **context: Any) -> list[Message]: ...


class PromptBuilder(Protocol):
    async def build(
        self,
        messages: Sequence[Message],
        *,
        context_blocks: Sequence[Any] = (),
        skills: Sequence[Skill] = (),
        tools: Sequence[ToolDeclaration] = (),
    ) -> list[Message]: ...


def normalize_tools(tools: Any) -> list[ToolDeclaration]:
    """Accept a ToolRegistry (its active declarations), ToolDefinitions or declarations."""
    if tools is None:
        return []
    declarations = getattr(tools, "declarations", None)
    if callable(declarations) and not isinstance(tools, Mapping):
        return list(declarations())
    out: list[ToolDeclaration] = []
    for item in tools:
        declaration = getattr(item, "declaration", None)
        if callable(declaration):
            out.append(declaration())
        elif isinstance(item, Mapping) and isinstance(item.get("name"), str):
            out.append(dict(item))  # type: ignore[arg-type]
        else:
            raise ConfigError(
                f"tools must be ToolDefinitions or declarations with a name, got {type(item).__name__}"
            )
    return out


def _field(result: Any, key: str) -> Any:
    if isinstance(result, Mapping):
        return result.get(key)
    return getattr(result, key, None)


async def _compile_attention(
    groups: MessageGroups,
    *,
    compiler: Any,
    sticky: Any,
    model: ModelConfig,
    redactor: Any,
    turn: int | None,
    context: _ContextSource,
    on_report: Callable[[Any], Any] | None,
) -> MessageGroups:
    """The compiled history groups, without the context, skills and tools
    the compiler measured (the prompt builder adds those)."""
    # Imported here, not at the top: a request without an attention compiler
    # (most of them) never loads the attention package.
    from prism.attention.compile import compile_attention

    outcome = compile_attention(
        compiler=compiler,
        groups=groups,
        model=model,
        frontier=sticky,
        redactor=redactor,
        turn=turn,
        session_id=context.session_id,
        run_id=context.run_id,
    )
    if inspect.isawaitable(outcome):
        outcome = await outcome
    compiled = _field(outcome, "groups")
    if not isinstance(compiled, MessageGroups):
        raise ConfigError("compile_attention returned no MessageGroups")
    if _field(outcome, "mutated") and on_report is not None:
        reported = on_report(_field(outcome, "report"))
        if inspect.isawaitable(reported):
            await reported
    return dataclasses.replace(compiled, context_blocks=[], skills=[], tools=[])


async def assemble_provider_input(
    *,
    model: ModelConfig,
    input: Any = None,
    history: Sequence[Message] = (),
    summaries: Iterable[str | Message] = (),
    system_instructions: Any = None,
    developer_instructions: Any = None,
    attachments: Iterable[InputAttachment] = (),
    resource_uris: Iterable[str] = (),
    resource_loader: ResourceLoader | None = None,
    tool_results: Iterable[ToolResult] = (),
    context_providers: Sequence[ContextProvider] = (),
    skills: Sequence[Skill] = (),
    tools: Any = (),
    middleware: MiddlewareRegistry | None = None,
    options: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    input_builder: InputBuilder | None = None,
    prompt_builder: PromptBuilder | None = None,
    session_id: str | None = None,
    run_id: str | None = None,
    turn: int | None = None,
    redactor: SecretRedactor,
    attention_compiler: Any = None,
    attention_sticky: Any = None,
    on_attention_report: Callable[[Any], Any] | None = None,
) -> ProviderRequest:
    """Build the request for one provider turn (see the module docstring).

    ``history`` is never mutated; every stage works on new lists.
    ``metadata`` goes on the request (not on messages) and is visible to context
    providers. ``redactor`` is the agent's (``NOOP_REDACTOR`` when there are
    no secrets); the attention pass redacts the stubs it writes with it. With ``attention_compiler`` set the default groups are used
    and ``input_builder`` is not consulted."""
    declared, skill_list = _checked_inputs(model, redactor, options, metadata, tools, skills)
    build_context: dict[str, Any] = {
        "system_instructions": system_instructions,
        "developer_instructions": developer_instructions,
        "history": history,
        "summaries": summaries,
        "attachments": attachments,
        "resource_uris": resource_uris,
        "resource_loader": resource_loader,
        "tool_results": tool_results,
    }
    context = _ContextSource(context_providers, metadata, session_id, run_id)
    if attention_compiler is not None:
        groups = await DefaultInputBuilder().build_groups(input, **build_context)
        # Resolve context first so the compiler measures the whole request;
        # `context` middleware still runs after `input_assembly`, as documented.
        raw_blocks = await context.resolve(compose_messages(groups))
        groups = dataclasses.replace(
            groups, context_blocks=raw_blocks, skills=skill_list, tools=declared
        )
        bare = await _compile_attention(
            groups,
            compiler=attention_compiler,
            sticky=attention_sticky,
            model=model,
            redactor=redactor,
            turn=turn,
            context=context,
            on_report=on_attention_report,
        )
        messages = await run_input_assembly(compose_messages(bare), middleware)
        context_blocks = await run_context_middleware(raw_blocks, middleware)
    else:
        if input_builder is None:
            groups = await DefaultInputBuilder().build_groups(input, **build_context)
            messages = await run_input_assembly(compose_messages(groups), middleware)
        else:
            messages = await input_builder.build(input, middleware=middleware, **build_context)
        context_blocks = await context.resolve(messages, middleware)
    messages = await _built_prompt(
        prompt_builder, middleware, messages, context_blocks, skill_list, declared
    )
    metadata = _with_stable_prefix(metadata, attention_compiler, attention_sticky, messages)
    return _request(model, messages, declared, options, metadata)


def _with_stable_prefix(
    metadata: Mapping[str, Any] | None, compiler: Any, frontier: Any, messages: list[Message]
) -> Mapping[str, Any] | None:
    """``metadata`` plus :data:`STABLE_PREFIX_METADATA` when the gate knows how
    much history is unchanged since the previous request. The gate speaks of
    its compiled history rows; the prompt builder and middleware may insert
    messages around them, so the last stable row is found in the final list
    by identity, from the end (it is usually a few rows back)."""
    rows = None if compiler is None else getattr(frontier, "stable_rows", None)
    if rows is None:
        return metadata
    stable = 0
    if rows:
        target = frontier.stable_message
        for index in range(len(messages) - 1, -1, -1):
            if messages[index] is target:
                stable = index + 1
                break
        else:
            return metadata  # rewritten by middleware: no claim
    return {**(metadata or {}), STABLE_PREFIX_METADATA: stable}


def _checked_inputs(
    model: object,
    redactor: object,
    options: object,
    metadata: object,
    tools: Any,
    skills: Sequence[Skill],
) -> tuple[list[ToolDeclaration], list[Skill]]:
    """The declared tools and the skills, once every argument checked out."""
    if not isinstance(model, Mapping) or not isinstance(model.get("provider"), str):
        raise ConfigError("model must be a ModelConfig dict with 'provider' and 'model'")
    require_redactor(redactor, owner="assemble_provider_input")
    if options is not None and not isinstance(options, Mapping):
        raise ConfigError("options must be a mapping")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ConfigError("metadata must be a mapping")
    declared = normalize_tools(tools)
    skill_list = list(skills)
    for skill in skill_list:
        if not isinstance(skill, Skill):
            raise ConfigError(f"skills must be Skill objects, got {type(skill).__name__}")
    return declared, skill_list


@dataclasses.dataclass(frozen=True, slots=True)
class _ContextSource:
    """The context providers of one request and what they are told."""

    providers: Sequence[ContextProvider]
    metadata: Mapping[str, Any] | None
    session_id: str | None
    run_id: str | None

    def request(self, messages: Sequence[Message]) -> ContextRequest:
        if not self.providers:  # skip copying a long history for nobody
            return ContextRequest(metadata=dict(self.metadata or {}))
        return ContextRequest(
            messages=tuple(messages),
            metadata=dict(self.metadata or {}),
            session_id=self.session_id,
            run_id=self.run_id,
        )

    async def resolve(
        self, messages: Sequence[Message], middleware: MiddlewareRegistry | None = None
    ) -> list[ContextBlock]:
        return await resolve_context_providers(
            self.providers, self.request(messages), middleware=middleware
        )


async def _built_prompt(
    prompt_builder: PromptBuilder | None,
    middleware: MiddlewareRegistry | None,
    messages: list[Message],
    context_blocks: list[ContextBlock],
    skills: list[Skill],
    declared: list[ToolDeclaration],
) -> list[Message]:
    """The prompt builder adds context and skills; then ``prompt_build``
    middleware may edit the messages (only them: the request's tools stay
    the host's, see the module docstring)."""
    builder = prompt_builder or DefaultPromptBuilder()
    messages = await builder.build(
        messages, context_blocks=context_blocks, skills=skills, tools=declared
    )
    if middleware is None or not middleware.has("prompt_build"):
        return messages
    payload: PromptBuildPayload = {
        "messages": messages,
        "context": context_blocks,
        "skills": skills,
        "tools": copy.deepcopy(declared),
    }
    updated = await middleware.run("prompt_build", payload)
    if not isinstance(updated, Mapping) or not isinstance(updated.get("messages"), list):
        raise ConfigError("prompt_build middleware must return a dict with a 'messages' list")
    return [check_message(m, "prompt_build result") for m in updated["messages"]]


def _request(
    model: ModelConfig,
    messages: list[Message],
    declared: list[ToolDeclaration],
    options: Mapping[str, Any] | None,
    metadata: Mapping[str, Any] | None,
) -> ProviderRequest:
    request: ProviderRequest = {"model": model, "messages": messages}
    if declared:
        request["tools"] = declared
    if options:
        request["options"] = dict(options)
    if metadata:
        request["metadata"] = dict(metadata)
    return request
