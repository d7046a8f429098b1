"""Request side of the OpenAI-compatible adapter: policies and body serialization.

Every Prism content block is either sent or refused with a
:class:`RequestSerializationError` naming the block; nothing is dropped
silently. The one block a policy may leave out on purpose is ``thinking``
(``thinking="omit"``), for APIs that do not accept reasoning back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from prism.contracts import ContentBlock, JsonValue, Message, ProviderRequest, ToolDeclaration
from prism.errors import ConfigError
from prism.providers._http_stream import (
    cache_key_option,
    copy_options,
    finish_body,
    json_schema_option,
    max_tokens_option,
    policy_from_json,
    request_model,
    request_options,
    tool_call_id_and_name,
    tool_choice_option,
)
from prism.providers._request_blocks import image_url, in_band_tool_result, refuse, tool_fields
from prism.providers._tool_images import omit_tool_images
from prism.providers._tool_replies import rows_with_tool_images, text_tool_outputs

ThinkingPolicy = Literal["refuse", "omit", "reasoning_content", "reasoning"]
MaxTokensField = Literal["max_tokens", "max_completion_tokens"]
CacheMode = Literal["automatic", "prompt_cache_key", "none"]

_THINKING: tuple[str, ...] = ("refuse", "omit", "reasoning_content", "reasoning")
_MAX_FIELDS: tuple[str, ...] = ("max_tokens", "max_completion_tokens")
_CACHE_MODES: tuple[str, ...] = ("automatic", "prompt_cache_key", "none")


@dataclass(frozen=True, slots=True)
class RequestPolicy:
    """How a request is written for one API flavour.

    thinking: what happens to ``thinking`` blocks in history. ``"refuse"``
      (default) raises; ``"reasoning_content"`` / ``"reasoning"`` send the text
      in that field of the assistant message; ``"omit"`` leaves them out on
      purpose for APIs that take no reasoning input (the text was the model's
      own output, so nothing the user wrote is lost).
    max_tokens_field: name of the output-limit field the API expects.
    include_usage: ask for a final usage chunk (``stream_options``).
    require_done: a stream that ends without ``[DONE]`` is an error.
    extra_body: merged into every body last (host-chosen vendor fields).
    """

    thinking: ThinkingPolicy = "refuse"
    max_tokens_field: MaxTokensField = "max_tokens"
    include_usage: bool = True
    require_done: bool = True
    extra_body: Mapping[str, JsonValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.thinking not in _THINKING:
            raise ConfigError(
                f"request_policy.thinking must be one of {', '.join(_THINKING)}; "
                f"got {self.thinking!r}"
            )
        if self.max_tokens_field not in _MAX_FIELDS:
            raise ConfigError(
                f"request_policy.max_tokens_field must be one of {', '.join(_MAX_FIELDS)}; "
                f"got {self.max_tokens_field!r}"
            )
        if not isinstance(self.extra_body, Mapping):
            raise ConfigError("request_policy.extra_body must be a mapping")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RequestPolicy:
        return policy_from_json(cls, data)


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """Prompt caching. ``automatic``: the API caches prefixes itself, nothing
    is sent. ``prompt_cache_key``: send ``prompt_cache_key`` taken from
    ``request.options["cacheKey"]`` or else ``request.metadata["sessionId"]``
    so one session's turns land on the same cache. ``none``: nothing is sent."""

    mode: CacheMode = "automatic"

    def __post_init__(self) -> None:
        if self.mode not in _CACHE_MODES:
            raise ConfigError(
                f"cache_policy.mode must be one of {', '.join(_CACHE_MODES)}; got {self.mode!r}"
            )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CachePolicy:
        unknown = sorted(set(data) - {"mode"})
        if unknown:
            raise ConfigError(f"unknown cache policy keys: {', '.join(unknown)}")
        return cls(**data)


# Generic ProviderRequest.options -> body field. Unknown options are not sent:
# options are shared across providers, vendor fields go in extraBody.
_OPTION_FIELDS: dict[str, str] = {
    "temperature": "temperature",
    "topP": "top_p",
    "stop": "stop",
    "seed": "seed",
    "presencePenalty": "presence_penalty",
    "frequencyPenalty": "frequency_penalty",
    "reasoningEffort": "reasoning_effort",
    "parallelToolCalls": "parallel_tool_calls",
    "user": "user",
}


def dumps_compact(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def build_request_body(
    request: ProviderRequest,
    *,
    policy: RequestPolicy,
    cache: CachePolicy,
    default_options: Mapping[str, JsonValue] | None = None,
) -> dict[str, Any]:
    """The Chat Completions streaming body for ``request``."""
    model = request_model(request)
    body: dict[str, Any] = {
        "model": model["model"],
        "messages": serialize_messages(
            omit_tool_images(request.get("messages", []), model), policy
        ),
        "stream": True,
    }
    if policy.include_usage:
        body["stream_options"] = {"include_usage": True}
    tools = request.get("tools")
    if tools:
        body["tools"] = [serialize_tool(t) for t in tools]
    options = request_options(request, default_options)
    _apply_options(body, options, policy)
    key = cache_key_option(request, options) if cache.mode == "prompt_cache_key" else None
    if key is not None:
        body["prompt_cache_key"] = key
    return finish_body(body, policy.extra_body, options)


def _apply_options(
    body: dict[str, Any], options: Mapping[str, JsonValue], policy: RequestPolicy
) -> None:
    copy_options(body, options, _OPTION_FIELDS)
    max_tokens = max_tokens_option(options)
    if max_tokens is not None:
        body[policy.max_tokens_field] = max_tokens
    fmt = json_schema_option(options)
    if fmt is not None:
        kind, schema = fmt
        if kind == "json_object":
            body["response_format"] = {"type": "json_object"}
        else:
            name, shape = schema
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": shape, "strict": False},
            }
    choice = tool_choice_option(options)
    if choice is not None:
        mode, name = choice
        body["tool_choice"] = (
            {"type": "function", "function": {"name": name}} if mode == "tool" else mode
        )


def serialize_tool(tool: ToolDeclaration) -> dict[str, Any]:
    return {"type": "function", "function": tool_fields(tool, "parameters")}


def serialize_messages(messages: list[Message], policy: RequestPolicy) -> list[dict[str, Any]]:
    return rows_with_tool_images(
        messages,
        tool=_tool_messages,
        others={
            "system": lambda content, index: [
                {"role": "system", "content": _text_only(content, index, "system")}
            ],
            "user": _user_message,
            "assistant": lambda content, index: [_assistant_message(content, index, policy)],
        },
        images_row=_tool_images_message,
    )


def _text_only(content: list[ContentBlock], index: int, role: str) -> str:
    parts: list[str] = []
    for block in content:
        if block.get("type") != "text":
            raise refuse(block, index, role, f"{role} messages carry text only")
        parts.append(block["text"])  # type: ignore[typeddict-item]
    return "\n\n".join(parts)


def _image_part(block: Mapping[str, Any], index: int) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": image_url(block, index)}}


def _user_message(content: list[ContentBlock], index: int) -> list[dict[str, Any]]:
    # Tool results may ride in a user message (some hosts do this); they become
    # `tool` messages placed before the user's own text, as the API requires
    # them to follow the assistant turn that made the calls.
    tool_msgs: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": block["text"]})  # type: ignore[typeddict-item]
        elif kind == "image":
            parts.append(_image_part(block, index))
        elif kind == "tool_result":
            tool_msgs.append(_tool_result(block, index))
        else:
            raise refuse(block, index, "user", "only text, image and tool_result fit here")
    out = tool_msgs
    if parts:
        if all(p["type"] == "text" for p in parts):
            out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
        else:
            out.append({"role": "user", "content": parts})
    elif not tool_msgs:
        out.append({"role": "user", "content": ""})
    return out


def _assistant_message(
    content: list[ContentBlock], index: int, policy: RequestPolicy
) -> dict[str, Any]:
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            texts.append(block["text"])  # type: ignore[typeddict-item]
        elif kind == "tool_call":
            calls.append(_tool_call(block, index))
        elif kind == "thinking":
            if policy.thinking == "refuse":
                raise refuse(
                    block,
                    index,
                    "assistant",
                    "this provider's request_policy has thinking='refuse'; choose "
                    "'reasoning_content', 'reasoning' or 'omit'",
                )
            thinking.append(block["text"])  # type: ignore[typeddict-item]
        else:
            raise refuse(block, index, "assistant", "assistant messages carry text and tool calls")
    # null content is only valid next to tool_calls; several servers reject it otherwise.
    text: str | None = "".join(texts) if texts or not calls else None
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = calls
    if thinking and policy.thinking in ("reasoning_content", "reasoning"):
        msg[policy.thinking] = "".join(thinking)
    return msg


def _tool_call(block: Mapping[str, Any], index: int) -> dict[str, Any]:
    call_id, name = tool_call_id_and_name(block, index)
    args = block.get("arguments", {})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": dumps_compact(args if args is not None else {})},
    }


def _tool_result(block: Mapping[str, Any], index: int) -> dict[str, Any]:
    call_id, text = in_band_tool_result(block, index)
    return _tool_message(call_id, text)


def _tool_message(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _tool_messages(
    content: list[ContentBlock], index: int, held: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One ``tool`` message per result (text only: the API's tool messages
    take no images); a result's images go to ``held`` as user-message parts."""
    outputs = text_tool_outputs(content, index, held, text_type="text", image_part=_image_part)
    return [_tool_message(call_id, text) for call_id, text in outputs]


def _tool_images_message(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "content": parts}
