"""Request side of the OpenAI Responses adapter: policy and body.

Stateless by default (``store: false``): Prism owns the history and sends it
whole every turn. Reasoning items come back with their encrypted content
(``include: ["reasoning.encrypted_content"]``) and are carried across turns
in a ``thinking`` block's ``signature`` as an envelope that also names the
model that wrote them, since another model cannot decrypt them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from prism.contracts import ContentBlock, JsonValue, Message, ProviderRequest, ToolDeclaration
from prism.errors import ConfigError
from prism.providers._http_stream import (
    BodyError,
    cache_key_option,
    copy_options,
    finish_body,
    json_schema_option,
    logger,
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

ENVELOPE_PREFIX = "prism.openai-responses.v1:"
ForeignReasoning = Literal["omit", "send"]


@dataclass(frozen=True, slots=True)
class ResponsesRequestPolicy:
    """How requests are written.

    store: ``False`` (default) keeps nothing on the server; ``True`` lets it
      store responses (Prism still sends the whole history).
    foreign_reasoning: reasoning items written by another model than the
      request's are left out (``"omit"``, default: the API cannot decrypt
      them and answers 400) or sent anyway (``"send"``).
    reasoning_summary: asks for reasoning summaries (``"auto"``,
      ``"concise"``, ``"detailed"``) or none (``None``).
    include_encrypted_reasoning: asks for ``reasoning.encrypted_content``
      (on by default; turn it off for a gateway that refuses it).
    extra_body: merged into every body last.
    """

    store: bool = False
    foreign_reasoning: ForeignReasoning = "omit"
    reasoning_summary: str | None = "auto"
    include_encrypted_reasoning: bool = True
    extra_body: Mapping[str, JsonValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.foreign_reasoning not in ("omit", "send"):
            raise ConfigError(
                f"foreign_reasoning must be 'omit' or 'send'; got {self.foreign_reasoning!r}"
            )
        if self.reasoning_summary not in (None, "auto", "concise", "detailed"):
            raise ConfigError(
                "reasoning_summary must be None, 'auto', 'concise' or 'detailed'; "
                f"got {self.reasoning_summary!r}"
            )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResponsesRequestPolicy:
        return policy_from_json(cls, data)


def reasoning_envelope(model: str, items: list[dict[str, Any]]) -> str:
    raw = json.dumps({"model": model, "items": items}, separators=(",", ":"), ensure_ascii=False)
    return ENVELOPE_PREFIX + base64.urlsafe_b64encode(raw.encode()).decode("ascii")


def open_envelope(signature: str, where: str) -> tuple[str, list[dict[str, Any]]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(signature[len(ENVELOPE_PREFIX) :]))
    except ValueError:
        data = None
    items = data.get("items") if isinstance(data, dict) else None
    model = data.get("model") if isinstance(data, dict) else None
    if (
        not isinstance(model, str)
        or not isinstance(items, list)
        or not all(_item_ok(i) for i in items)
    ):
        raise BodyError(
            f"thinking block in {where} has a damaged reasoning envelope (it is not the "
            "reasoning items this adapter wrote)"
        )
    return model, items


def _item_ok(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("type") == "reasoning"
        and isinstance(item.get("id"), str)
        and isinstance(item.get("encrypted_content"), str | None)
    )


_OPTION_FIELDS = {
    "temperature": "temperature",
    "topP": "top_p",
    "parallelToolCalls": "parallel_tool_calls",
    "user": "user",
}


def build_responses_body(
    request: ProviderRequest,
    *,
    policy: ResponsesRequestPolicy,
    default_options: Mapping[str, JsonValue],
) -> dict[str, Any]:
    model = request_model(request)
    name = model["model"]
    body: dict[str, Any] = {
        "model": name,
        "input": serialize_input(
            omit_tool_images(request.get("messages", []), model), name, policy
        ),
        "stream": True,
        "store": policy.store,
    }
    if policy.include_encrypted_reasoning:
        body["include"] = ["reasoning.encrypted_content"]
    tools = request.get("tools")
    if tools:
        body["tools"] = [serialize_tool(t) for t in tools]
    options = request_options(request, default_options)
    _apply_options(body, options, policy)
    key = cache_key_option(request, options)
    if key is not None:
        body["prompt_cache_key"] = key
    return finish_body(body, policy.extra_body, options)


def _apply_options(
    body: dict[str, Any], options: Mapping[str, JsonValue], policy: ResponsesRequestPolicy
) -> None:
    copy_options(body, options, _OPTION_FIELDS)
    max_tokens = max_tokens_option(options)
    if max_tokens is not None:
        body["max_output_tokens"] = max_tokens
    effort = options.get("reasoningEffort")
    if effort is not None:
        reasoning: dict[str, Any] = {"effort": effort}
        if policy.reasoning_summary is not None:
            reasoning["summary"] = policy.reasoning_summary
        body["reasoning"] = reasoning
    choice = tool_choice_option(options)
    if choice is not None:
        mode, name = choice
        body["tool_choice"] = {"type": "function", "name": name} if mode == "tool" else mode
    fmt = json_schema_option(options)
    if fmt is not None:
        kind, schema = fmt
        if kind == "json_object":
            body["text"] = {"format": {"type": "json_object"}}
        else:
            name, shape = schema
            body["text"] = {
                "format": {"type": "json_schema", "name": name, "schema": shape, "strict": False}
            }


def serialize_tool(tool: ToolDeclaration) -> dict[str, Any]:
    return {"type": "function", **tool_fields(tool, "parameters"), "strict": False}


def serialize_input(
    messages: list[Message], model: str, policy: ResponsesRequestPolicy
) -> list[dict[str, Any]]:
    return rows_with_tool_images(
        messages,
        tool=_tool_items,
        others={
            "system": lambda content, index: [_system_item(content, index)],
            "user": lambda content, index: _user_items(content, index, "user"),
            "assistant": lambda content, index: _assistant_items(content, index, model, policy),
        },
        images_row=_tool_images_item,
    )


def _tool_items(
    content: list[ContentBlock], index: int, held: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One ``function_call_output`` per result, its text only (a string
    output reaches every Responses-compatible server); a result's images go
    to ``held`` as ``input_image`` parts of a following user message."""
    outputs = text_tool_outputs(content, index, held, text_type="input_text", image_part=_image)
    return [_output_item(call_id, text) for call_id, text in outputs]


def _tool_images_item(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": parts}


def _system_item(content: list[ContentBlock], index: int) -> dict[str, Any]:
    parts = []
    for block in content:
        if block.get("type") != "text":
            raise refuse(block, index, "system", "system messages carry text only")
        parts.append({"type": "input_text", "text": block["text"]})  # type: ignore[typeddict-item]
    return {"type": "message", "role": "system", "content": parts}


def _user_items(content: list[ContentBlock], index: int, role: str) -> list[dict[str, Any]]:
    outputs: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "text" and role == "user":
            parts.append({"type": "input_text", "text": block["text"]})  # type: ignore[typeddict-item]
        elif kind == "image" and role == "user":
            parts.append(_image(block, index))
        elif kind == "tool_result":
            outputs.append(_function_output(block, index))
        else:
            raise refuse(block, index, role, "only text, image and tool_result fit here")
    if parts:
        outputs.append({"type": "message", "role": "user", "content": parts})
    return outputs


def _image(block: Mapping[str, Any], index: int) -> dict[str, Any]:
    return {"type": "input_image", "image_url": image_url(block, index)}


def _function_output(block: Mapping[str, Any], index: int) -> dict[str, Any]:
    return _output_item(*in_band_tool_result(block, index))


def _output_item(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def _assistant_items(
    content: list[ContentBlock], index: int, model: str, policy: ResponsesRequestPolicy
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "thinking":
            items.extend(_reasoning_items(block, index, model, policy))
        elif kind == "text":
            texts.append({"type": "output_text", "text": block["text"]})  # type: ignore[typeddict-item]
        elif kind == "tool_call":
            call_id, name = tool_call_id_and_name(block, index)
            args = block.get("arguments")
            arguments = json.dumps(args or {}, separators=(",", ":"), ensure_ascii=False)
            items.append(
                {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
            )
        else:
            raise refuse(
                block, index, "assistant", "assistant messages carry text, thinking and tool calls"
            )
    if texts:
        # The message goes before the calls, as the model produced it.
        first_call = next((i for i, it in enumerate(items) if it["type"] == "function_call"), None)
        message = {"type": "message", "role": "assistant", "content": texts}
        items.insert(len(items) if first_call is None else first_call, message)
    return items


def _reasoning_items(
    block: Mapping[str, Any], index: int, model: str, policy: ResponsesRequestPolicy
) -> list[dict[str, Any]]:
    signature = block.get("signature")
    if not isinstance(signature, str) or not signature.startswith(ENVELOPE_PREFIX):
        # Reasoning text without an encrypted item (another provider's) has
        # no input form here; it was the model's own output.
        logger.debug("openai-responses: plain thinking block in messages[%d] left out", index)
        return []
    source, items = open_envelope(signature, f"messages[{index}]")
    if source != model and policy.foreign_reasoning == "omit":
        logger.debug(
            "openai-responses: reasoning in messages[%d] is from %r, not %r: left out",
            index,
            source,
            model,
        )
        return []
    return items
