"""Context providers: host-supplied functions that contribute text blocks to a
turn, resolved in the order given, then passed through ``context`` middleware."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, Protocol, TypedDict, runtime_checkable

from prism.contracts import Message
from prism.errors import ConfigError, PrismError
from prism.middleware import MiddlewareRegistry


class ContextBlock(TypedDict):
    text: str
    name: NotRequired[str]
    tags: NotRequired[list[str]]


@dataclass(frozen=True, slots=True)
class ContextRequest:
    """What a provider may look at: the turn's input messages and ids, no credentials."""

    messages: Sequence[Message] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    run_id: str | None = None


ContextProvided = ContextBlock | str | Sequence[ContextBlock | str] | None


@runtime_checkable
class ContextProvider(Protocol):
    name: str

    def provide(self, request: ContextRequest) -> ContextProvided | Awaitable[ContextProvided]: ...


def normalize_context_block(value: Any, source: str) -> ContextBlock:
    if isinstance(value, str):
        return {"name": source, "text": value}
    if not isinstance(value, Mapping) or not isinstance(value.get("text"), str):
        raise ConfigError(f"context provider {source!r} returned a block without string 'text'")
    block: ContextBlock = {"text": value["text"]}
    name = value.get("name", source)
    if not isinstance(name, str):
        raise ConfigError(f"context provider {source!r} returned a non-string block name")
    block["name"] = name
    tags = value.get("tags")
    if tags is not None:
        if isinstance(tags, str) or not all(isinstance(tag, str) for tag in tags):
            raise ConfigError(f"context provider {source!r} returned tags that are not strings")
        block["tags"] = list(tags)
    return block


async def resolve_context_providers(
    providers: Sequence[ContextProvider],
    request: ContextRequest | None = None,
    *,
    middleware: MiddlewareRegistry | None = None,
) -> list[ContextBlock]:
    """Call each provider in order (sequentially, so order is deterministic)
    and flatten their blocks. A provider that raises fails the assembly with a
    :class:`~prism.errors.PrismError` naming it (the original is chained, its
    text is not copied into the message)."""
    request = request or ContextRequest()
    blocks: list[ContextBlock] = []
    for provider in providers:
        name = getattr(provider, "name", None)
        if not isinstance(name, str) or not callable(getattr(provider, "provide", None)):
            raise ConfigError("context providers need a string name and a provide(request) method")
        try:
            produced: Any = provider.provide(request)
            if inspect.isawaitable(produced):
                produced = await produced
        except Exception as error:
            raise PrismError(
                f"context provider {name!r} failed: {type(error).__name__}",
                code="context_provider_failed",
            ) from error
        if produced is None:
            continue
        if isinstance(produced, str | Mapping):
            blocks.append(normalize_context_block(produced, name))
        else:
            blocks.extend(normalize_context_block(item, name) for item in produced)
    return await run_context_middleware(blocks, middleware)


async def run_context_middleware(
    blocks: list[ContextBlock], middleware: MiddlewareRegistry | None
) -> list[ContextBlock]:
    if middleware is None:
        return blocks
    updated = await middleware.run("context", blocks)
    if not isinstance(updated, list):
        raise ConfigError("context middleware must return a list of context blocks")
    return [normalize_context_block(block, "context") for block in updated]


def render_context_block(block: ContextBlock) -> str:
    name = block.get("name")
    return f"Context {name}:\n{block['text']}" if name else f"Context:\n{block['text']}"
