"""Message groups: the parts of one provider request before they are flattened.

Keeping the parts apart lets later stages (the attention compiler, prompt
middleware) work on history or tool results without re-parsing a flat list.
Groups hold references to the caller's messages; nothing here mutates them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from prism.assembly.context import ContextBlock, render_context_block
from prism.assembly.skills import Skill
from prism.assembly.system import PromptInstruction, SystemPromptLayer, compose_system_prompt
from prism.contracts import Message, ToolDeclaration, ToolResult
from prism.errors import ConfigError

AgentInput: TypeAlias = "str | Message | Sequence[Message]"
InstructionsInput: TypeAlias = "str | PromptInstruction | SystemPromptLayer | Sequence[str | PromptInstruction | SystemPromptLayer]"

_ROLES = frozenset({"system", "user", "assistant", "tool"})


def text_message(role: str, text: str, metadata: Mapping[str, Any] | None = None) -> Message:
    message: Message = {"role": role, "content": [{"type": "text", "text": text}]}  # type: ignore[typeddict-item]
    if metadata:
        message["metadata"] = dict(metadata)
    return message


def check_message(value: Any, where: str) -> Message:
    """Cheap shape check (role and a content list); blocks are the provider's business."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: message must be a dict, got {type(value).__name__}")
    if value.get("role") not in _ROLES:
        raise ConfigError(
            f"{where}: message role must be one of {sorted(_ROLES)}, got {value.get('role')!r}"
        )
    if not isinstance(value.get("content"), list):
        raise ConfigError(f"{where}: message content must be a list of blocks")
    return value  # type: ignore[return-value]


def normalize_input(value: Any, metadata: Mapping[str, Any] | None = None) -> list[Message]:
    """``str`` -> one user message; a Message or a list of them is kept (copied
    only when ``metadata`` has to be merged in)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [text_message("user", value, metadata)]
    if isinstance(value, dict):
        messages = [check_message(value, "input")]
    elif isinstance(value, Sequence) and not isinstance(value, bytes):
        messages = [check_message(item, f"input[{index}]") for index, item in enumerate(value)]
    else:
        raise ConfigError(
            f"input must be a string, a message or a list of messages, got {type(value).__name__}"
        )
    if metadata:
        messages = [
            {**message, "metadata": {**message.get("metadata", {}), **metadata}}
            for message in messages
        ]
    return messages


def instruction_messages(value: Any, default_label: str) -> list[Message]:
    """Instructions as system messages, ``"<label>:\\n<text>"`` each."""
    if value is None:
        return []
    items = [value] if isinstance(value, str | dict | SystemPromptLayer) else list(value)
    layers = [item for item in items if isinstance(item, SystemPromptLayer)]
    layered = iter(compose_system_prompt(layers)) if layers else iter(())
    out: list[Message] = []
    for item in items:
        if isinstance(item, str):
            if item.strip():
                out.append(text_message("system", f"{default_label}:\n{item}"))
        elif isinstance(item, SystemPromptLayer):
            # Layers keep their package/app/user/run order among themselves.
            composed = next(layered, None)
            if composed is not None:
                out.append(text_message("system", f"{composed['label']}:\n{composed['text']}"))
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            label = item.get("label")
            if label == "":
                # Asked for by name: the text goes to the model as written,
                # with no "System instruction:" line in front of it.
                out.append(text_message("system", item["text"]))
            else:
                out.append(text_message("system", f"{label or default_label}:\n{item['text']}"))
        else:
            raise ConfigError(
                f"instructions must be strings, {{label, text}} dicts or SystemPromptLayer,"
                f" got {type(item).__name__}"
            )
    return out


def summary_messages(summaries: Iterable[str | Message]) -> list[Message]:
    out: list[Message] = []
    for index, summary in enumerate(summaries):
        if isinstance(summary, str):
            out.append(text_message("system", f"Conversation summary:\n{summary}"))
        else:
            out.append(check_message(summary, f"summaries[{index}]"))
    return out


def tool_result_message(result: ToolResult) -> Message:
    if not isinstance(result, Mapping) or not isinstance(result.get("toolCallId"), str):
        raise ConfigError("tool results need a string 'toolCallId'")
    if not isinstance(result.get("name"), str):
        raise ConfigError(f"tool result {result['toolCallId']!r} needs a string 'name'")
    block: dict[str, Any] = {
        "type": "tool_result",
        "toolCallId": result["toolCallId"],
        "name": result["name"],
        "result": result.get("value"),
    }
    if result.get("isError"):
        block["isError"] = True
    if result.get("metadata"):
        block["metadata"] = result["metadata"]
    content: list[Any] = [block]
    images = result.get("images")
    if images:
        content.extend(_tool_images(images, result["toolCallId"]))
    return {"role": "tool", "content": content}


def _tool_images(images: Any, call_id: str) -> list[Any]:
    """A result's images as the ``image`` blocks that follow its
    ``tool_result`` block (a middleware may have rewritten them: checked)."""
    if not isinstance(images, list):
        raise ConfigError(f"tool result {call_id!r}: 'images' must be a list of image blocks")
    for index, image in enumerate(images):
        if not (
            isinstance(image, Mapping)
            and image.get("type") == "image"
            and (isinstance(image.get("data"), str) or isinstance(image.get("url"), str))
        ):
            raise ConfigError(
                f"tool result {call_id!r}: images[{index}] must be an image block with data or url"
            )
    return list(images)


def skill_message(skill: Skill) -> Message:
    return text_message("system", skill.render())


@dataclass(frozen=True, slots=True)
class MessageGroups:
    """One request's parts. ``instructions`` and ``summaries`` are system
    messages; ``tool_results`` are role ``tool`` messages."""

    instructions: list[Message] = field(default_factory=list)
    summaries: list[Message] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)
    input: list[Message] = field(default_factory=list)
    attachments: list[Message] = field(default_factory=list)
    tool_results: list[Message] = field(default_factory=list)
    context_blocks: list[ContextBlock] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    tools: list[ToolDeclaration] = field(default_factory=list)


def build_message_groups(
    *,
    input: Any = None,
    history: Sequence[Message] = (),
    summaries: Iterable[str | Message] = (),
    system_instructions: Any = None,
    developer_instructions: Any = None,
    attachments: Sequence[Message] = (),
    tool_results: Iterable[ToolResult] = (),
    context_blocks: Iterable[ContextBlock] = (),
    skills: Iterable[Skill] = (),
    tools: Iterable[ToolDeclaration] = (),
    metadata: Mapping[str, Any] | None = None,
) -> MessageGroups:
    """Groups from already-loaded parts (``attachments`` are messages here;
    the input builder turns attachment specs into messages first)."""
    skill_list = list(skills)
    for skill in skill_list:
        if not isinstance(skill, Skill):
            raise ConfigError(f"skills must be Skill objects, got {type(skill).__name__}")
    return MessageGroups(
        instructions=instruction_messages(system_instructions, "System instruction")
        + instruction_messages(developer_instructions, "Developer instruction"),
        summaries=summary_messages(summaries),
        history=list(history),
        input=normalize_input(input, metadata),
        attachments=list(attachments),
        tool_results=[tool_result_message(result) for result in tool_results],
        context_blocks=list(context_blocks),
        skills=skill_list,
        tools=list(tools),
    )


def _tool_call_ids(message: Message) -> list[str]:
    if message.get("role") != "assistant":
        return []
    return [
        block["id"]  # type: ignore[typeddict-item]
        for block in message.get("content", ())
        if block.get("type") == "tool_call"
    ]


def place_tool_results(messages: list[Message], results: Sequence[Message]) -> list[Message]:
    """Insert each tool message right after the assistant message that called
    it (after earlier results for the same assistant); results with no
    matching call go at the end. Returns a new list."""
    if not results:
        return messages
    answered: list[Any] = [_answered_id(result) for result in results]
    wanted = {call_id for call_id in answered if isinstance(call_id, str)}
    owner: dict[str, int] = {}
    # Walk back from the end: the calling assistant is almost always the last
    # message, so a long history is not scanned every turn.
    for index in range(len(messages) - 1, -1, -1):
        if len(owner) == len(wanted):
            break
        for call_id in _tool_call_ids(messages[index]):
            if call_id in wanted:
                owner.setdefault(call_id, index)
    inserts: dict[int, list[Message]] = {}
    trailing: list[Message] = []
    for result, call_id in zip(results, answered, strict=True):
        position = owner.get(call_id) if isinstance(call_id, str) else None
        if position is None:
            trailing.append(result)
        else:
            inserts.setdefault(position, []).append(result)
    if not inserts:
        return [*messages, *trailing]
    first = min(inserts)
    out: list[Message] = messages[:first]
    pending: list[Message] | None = None
    for index in range(first, len(messages)):
        message = messages[index]
        # Flush after the assistant and any tool messages already answering it.
        if pending is not None and message.get("role") != "tool":
            out.extend(pending)
            pending = None
        out.append(message)
        if index in inserts:
            pending = inserts[index]
    if pending is not None:
        out.extend(pending)
    out.extend(trailing)
    return out


def _answered_id(result: Message) -> Any:
    for block in result.get("content", ()):
        if block.get("type") == "tool_result":
            return block.get("toolCallId")
    return None


def compose_messages(groups: MessageGroups) -> list[Message]:
    """Flatten: instructions, summaries, context blocks and skills (as system
    text), history, input, attachments; tool results are placed after the
    assistant message that called them."""
    messages: list[Message] = [*groups.instructions, *groups.summaries]
    messages.extend(text_message("system", render_context_block(b)) for b in groups.context_blocks)
    messages.extend(skill_message(skill) for skill in groups.skills)
    messages.extend(groups.history)
    messages.extend(groups.input)
    messages.extend(groups.attachments)
    return place_tool_results(messages, groups.tool_results)
