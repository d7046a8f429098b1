"""The default input builder: host input plus instructions, history, summaries,
attachments, explicit resources and tool results, as provider messages.

Only caller-provided loaders touch URIs; the builder itself does no I/O.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import Any, NotRequired, Protocol, TypedDict, runtime_checkable

from prism.assembly.groups import (
    MessageGroups,
    build_message_groups,
    check_message,
    compose_messages,
    text_message,
)
from prism.contracts import ContentBlock, Message, ToolResult
from prism.errors import ConfigError, PrismError
from prism.middleware import MiddlewareRegistry


class InputAttachment(TypedDict, total=False):
    """Exactly one of ``text``, ``content`` (blocks) or ``uri`` (loaded by the
    caller's resource loader)."""

    name: str
    text: str
    content: list[ContentBlock]
    uri: str


class LoadedResource(TypedDict):
    uri: str
    text: str
    name: NotRequired[str]


LoaderResult = LoadedResource | str


@runtime_checkable
class ResourceLoader(Protocol):
    def load(self, uri: str) -> LoaderResult | Awaitable[LoaderResult]: ...


async def _load(loader: ResourceLoader | None, uri: str, what: str) -> str:
    if loader is None:
        raise ConfigError(f"{what} {uri!r} needs a resource_loader")
    try:
        loaded: Any = loader.load(uri)
        if inspect.isawaitable(loaded):
            loaded = await loaded
    except Exception as error:
        raise PrismError(
            f"resource loader failed for {what} {uri!r}: {type(error).__name__}",
            code="resource_load_failed",
        ) from error
    if isinstance(loaded, str):
        return loaded
    if isinstance(loaded, Mapping) and isinstance(loaded.get("text"), str):
        return str(loaded["text"])
    raise ConfigError(f"resource loader returned no text for {what} {uri!r}")


async def attachment_messages(
    attachments: Iterable[InputAttachment], loader: ResourceLoader | None = None
) -> list[Message]:
    """Text and URI attachments become ``"Attachment <name>:\\n<text>"`` user
    messages; ``content`` attachments keep their blocks."""
    out: list[Message] = []
    for index, attachment in enumerate(attachments):
        if not isinstance(attachment, Mapping):
            raise ConfigError(f"attachments[{index}] must be a dict")
        kinds = [key for key in ("text", "content", "uri") if key in attachment]
        if len(kinds) != 1:
            raise ConfigError(f"attachments[{index}] needs exactly one of text, content or uri")
        name = attachment.get("name") or attachment.get("uri") or f"#{index + 1}"
        if "text" in attachment:
            if not isinstance(attachment["text"], str):
                raise ConfigError(f"attachments[{index}].text must be a string")
            out.append(text_message("user", f"Attachment {name}:\n{attachment['text']}"))
        elif "uri" in attachment:
            uri = attachment["uri"]
            if not isinstance(uri, str) or not uri:
                raise ConfigError(f"attachments[{index}].uri must be a non-empty string")
            text = await _load(loader, uri, "attachment")
            out.append(text_message("user", f"Attachment {name}:\n{text}"))
        else:
            content = attachment["content"]
            if not isinstance(content, list):
                raise ConfigError(f"attachments[{index}].content must be a list of blocks")
            out.append(check_message({"role": "user", "content": content}, f"attachments[{index}]"))
    return out


async def resource_messages(
    uris: Iterable[str], loader: ResourceLoader | None = None
) -> list[Message]:
    out: list[Message] = []
    for uri in uris:
        if not isinstance(uri, str) or not uri:
            raise ConfigError(f"resource uris must be non-empty strings, got {uri!r}")
        text = await _load(loader, uri, "resource")
        out.append(text_message("user", f"Resource {uri}:\n{text}"))
    return out


class DefaultInputBuilder:
    """``await build(input, ...)`` -> messages in this order: instructions
    (system, then developer), summaries, history, input, attachments and
    resources; tool results follow the assistant message that called them.
    ``input_assembly`` middleware runs on the final list when given."""

    name = "default-input"

    async def build_groups(
        self,
        input: Any = None,
        *,
        system_instructions: Any = None,
        developer_instructions: Any = None,
        history: Sequence[Message] = (),
        summaries: Iterable[str | Message] = (),
        attachments: Iterable[InputAttachment] = (),
        resource_uris: Iterable[str] = (),
        resource_loader: ResourceLoader | None = None,
        tool_results: Iterable[ToolResult] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> MessageGroups:
        loaded = await attachment_messages(attachments, resource_loader)
        loaded += await resource_messages(resource_uris, resource_loader)
        return build_message_groups(
            input=input,
            history=history,
            summaries=summaries,
            system_instructions=system_instructions,
            developer_instructions=developer_instructions,
            attachments=loaded,
            tool_results=tool_results,
            metadata=metadata,
        )

    async def build(
        self,
        input: Any = None,
        *,
        system_instructions: Any = None,
        developer_instructions: Any = None,
        history: Sequence[Message] = (),
        summaries: Iterable[str | Message] = (),
        attachments: Iterable[InputAttachment] = (),
        resource_uris: Iterable[str] = (),
        resource_loader: ResourceLoader | None = None,
        tool_results: Iterable[ToolResult] = (),
        metadata: Mapping[str, Any] | None = None,
        middleware: MiddlewareRegistry | None = None,
    ) -> list[Message]:
        groups = await self.build_groups(
            input,
            system_instructions=system_instructions,
            developer_instructions=developer_instructions,
            history=history,
            summaries=summaries,
            attachments=attachments,
            resource_uris=resource_uris,
            resource_loader=resource_loader,
            tool_results=tool_results,
            metadata=metadata,
        )
        return await run_input_assembly(compose_messages(groups), middleware)


async def run_input_assembly(
    messages: list[Message], middleware: MiddlewareRegistry | None
) -> list[Message]:
    if middleware is None:
        return messages
    updated = await middleware.run("input_assembly", messages)
    if not isinstance(updated, list):
        raise ConfigError("input_assembly middleware must return a list of messages")
    return [check_message(message, "input_assembly result") for message in updated]


def create_default_input_builder() -> DefaultInputBuilder:
    return DefaultInputBuilder()
