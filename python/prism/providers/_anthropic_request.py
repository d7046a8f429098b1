"""Request side of the Anthropic Messages adapter: policy, body, breakpoints.

Every Prism block is sent or refused with a :class:`BodyError` naming it.
Reasoning comes back verbatim: a ``thinking`` block whose ``signature`` is
a plain Anthropic signature is sent as ``{"type": "thinking", ...}``; a turn
with several reasoning blocks or a ``redacted_thinking`` block carries them
all in one envelope (:func:`reasoning_envelope`), sent back block by block
exactly as the server streamed them.
"""

from __future__ import annotations

import base64
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from prism.contracts import (
    STABLE_PREFIX_METADATA,
    ContentBlock,
    JsonValue,
    Message,
    ProviderRequest,
    ToolDeclaration,
)
from prism.errors import ConfigError
from prism.providers._http_stream import (
    BodyError,
    copy_options,
    finish_body,
    logger,
    max_tokens_option,
    policy_from_json,
    request_model,
    request_options,
    tool_call_id_and_name,
    tool_choice_option,
)
from prism.providers._request_blocks import inline_image, refuse, tool_fields, tool_result_text
from prism.providers._tool_images import omit_tool_images
from prism.providers._tool_replies import tool_replies

ENVELOPE_PREFIX = "prism.anthropic.v1:"
MAX_BREAKPOINTS = 4
BreakpointMode = Literal["auto", "system", "off"]
_MODES = ("auto", "system", "off")
_TTLS = ("5m", "1h")


def _tuple_if_list(value: Any) -> Any:
    """JSON spells pinned breakpoint indices as a list; the policy keeps a tuple."""
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True, slots=True)
class AnthropicRequestPolicy:
    """How requests are written.

    cache_breakpoints: ``"auto"`` (default) places ``cache_control`` where the
      request's stable prefix ends (after system and tools, at the last message
      unchanged since the session's previous request, and at the end);
      ``"system"`` one breakpoint after system and tools; ``"off"`` none; or
      a tuple of message indices to pin (negative counts from the end), which
      come after the system breakpoint (at most four in all).
    cache_ttl: ``"5m"`` or ``"1h"`` (the longer one bills writes at 2x).
    max_tokens: sent when neither the request nor the model says; the API
      requires one.
    extra_body: merged into every body last.
    """

    cache_breakpoints: BreakpointMode | tuple[int, ...] = field(
        default="auto", metadata={"from_json": _tuple_if_list}
    )
    cache_ttl: Literal["5m", "1h"] = "5m"
    max_tokens: int = 4096
    extra_body: Mapping[str, JsonValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        mode = self.cache_breakpoints
        if isinstance(mode, tuple):
            if len(mode) > MAX_BREAKPOINTS - 1 or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in mode
            ):
                raise ConfigError(
                    f"cache_breakpoints: at most 3 pinned message indices (ints); got {mode!r}"
                )
        elif mode not in _MODES:
            raise ConfigError(
                f"cache_breakpoints must be one of {', '.join(_MODES)} or a tuple of message "
                f"indices; got {mode!r}"
            )
        if self.cache_ttl not in _TTLS:
            raise ConfigError(f"cache_ttl must be '5m' or '1h'; got {self.cache_ttl!r}")
        if (
            isinstance(self.max_tokens, bool)
            or not isinstance(self.max_tokens, int)
            or self.max_tokens < 1
        ):
            raise ConfigError(f"max_tokens must be a positive int; got {self.max_tokens!r}")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AnthropicRequestPolicy:
        return policy_from_json(cls, data)


# -- reasoning envelopes --------------------------------------------------------


def reasoning_envelope(blocks: Sequence[Mapping[str, Any]]) -> str:
    """One signature string carrying every reasoning block of a turn, verbatim."""
    raw = json.dumps(list(blocks), separators=(",", ":"), ensure_ascii=False).encode()
    return ENVELOPE_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii")


def open_envelope(signature: str, where: str) -> list[dict[str, Any]]:
    try:
        blocks = json.loads(base64.urlsafe_b64decode(signature[len(ENVELOPE_PREFIX) :]))
    except ValueError:
        blocks = None
    if not isinstance(blocks, list) or not all(_raw_reasoning_ok(b) for b in blocks):
        raise BodyError(
            f"thinking block in {where} has a damaged reasoning envelope (it is not "
            "the list of thinking/redacted_thinking blocks this adapter wrote)"
        )
    return blocks


def _raw_reasoning_ok(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    if block.get("type") == "thinking":
        return isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str)
    return block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str)


# -- body -----------------------------------------------------------------------

_OPTION_FIELDS = {"temperature": "temperature", "topP": "top_p", "topK": "top_k"}


def build_messages_body(
    request: ProviderRequest,
    *,
    policy: AnthropicRequestPolicy,
    default_options: Mapping[str, JsonValue],
    prefix_memory: PrefixMemory | None,
) -> dict[str, Any]:
    model = request_model(request)
    row_ends: list[tuple[int, Any] | None] = []
    system, messages = serialize_messages(
        omit_tool_images(request.get("messages", []), model), row_ends=row_ends
    )
    body: dict[str, Any] = {"model": model["model"], "messages": messages, "stream": True}
    if system:
        body["system"] = system
    tools = request.get("tools")
    if tools:
        body["tools"] = [serialize_tool(t) for t in tools]
    options = request_options(request, default_options)
    limits = model.get("limits") or {}
    _apply_options(body, options, limits.get("maxOutputTokens") or policy.max_tokens)
    metadata = request.get("metadata") or {}
    session = metadata.get("sessionId")
    place_breakpoints(
        body,
        policy,
        prefix_memory,
        session if isinstance(session, str) else None,
        stable_block=_stable_block(metadata.get(STABLE_PREFIX_METADATA), row_ends),
    )
    return finish_body(body, policy.extra_body, options)


def _stable_block(stable: Any, row_ends: list[tuple[int, Any] | None]) -> tuple[int, Any] | None:
    """The wire row and block where ``messages[:stable]`` ends (the attention
    gate's claim, see STABLE_PREFIX_METADATA); None without a claim. A claim
    of no message rows is ``(-1, None)``: nothing to mark, and no fallback."""
    if isinstance(stable, bool) or not isinstance(stable, int) or stable < 0:
        return None
    count: int = stable
    for end in reversed(row_ends[:count]):
        if end is not None:
            row, block = end
            return row, block
    return -1, None


def _apply_options(
    body: dict[str, Any], options: Mapping[str, JsonValue], default_max: int
) -> None:
    copy_options(body, options, _OPTION_FIELDS)
    stop = options.get("stop")
    if stop is not None:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else stop
    body["max_tokens"] = max_tokens_option(options, default_max)
    budget = options.get("thinkingBudget")
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1024:
            raise BodyError("options.thinkingBudget must be an integer >= 1024")
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    choice = tool_choice_option(options)
    if choice is not None:
        mode, name = choice
        if mode == "tool":
            body["tool_choice"] = {"type": "tool", "name": name}
        else:
            body["tool_choice"] = {"type": "any" if mode == "required" else mode}
    if options.get("responseFormat") is not None:
        raise BodyError(
            "options.responseFormat: the Messages API has no response_format; ask for JSON "
            "in the prompt or use a tool"
        )


def serialize_tool(tool: ToolDeclaration) -> dict[str, Any]:
    return tool_fields(tool, "input_schema")


def serialize_messages(
    messages: list[Message],
    *,
    row_ends: list[tuple[int, Any] | None] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages). System messages anywhere go to the top-level
    ``system`` in order (the API has no system role); consecutive turns of one
    role are merged, as the API wants strict alternation. ``row_ends``, when
    given, gets one entry per message: ``(wire row, its last wire block)``,
    or None for a message that adds no message block."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content")
        if not isinstance(content, list):
            raise BodyError(f"messages[{index}].content must be a list of blocks")
        if role == "system":
            for block in content:
                if block.get("type") != "text":
                    raise refuse(block, index, role, "system messages carry text only")
                if block["text"]:  # type: ignore[typeddict-item]
                    system.append({"type": "text", "text": block["text"]})  # type: ignore[typeddict-item]
            if row_ends is not None:
                row_ends.append(None)
            continue
        if role == "tool":
            blocks, wire_role = _tool_blocks(content, index), "user"
        elif role == "user":
            blocks, wire_role = _user_blocks(content, index, role), "user"
        elif role == "assistant":
            blocks, wire_role = _assistant_blocks(content, index), "assistant"
        else:
            raise BodyError(f"messages[{index}] has unknown role {role!r}")
        if not blocks:
            if row_ends is not None:
                row_ends.append(None)
            continue
        if out and out[-1]["role"] == wire_role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": wire_role, "content": blocks})
        if row_ends is not None:
            row_ends.append((len(out) - 1, blocks[-1]))
    for wire in out:
        if wire["role"] == "user":
            # tool_result blocks must open a user turn.
            wire["content"].sort(key=lambda b: b.get("type") != "tool_result")
    return system, out


def _user_blocks(content: list[ContentBlock], index: int, role: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "text" and role == "user":
            if block["text"]:  # type: ignore[typeddict-item]
                blocks.append({"type": "text", "text": block["text"]})  # type: ignore[typeddict-item]
        elif kind == "image" and role == "user":
            blocks.append(_image(block, index))
        elif kind == "tool_result":
            blocks.append(_tool_result(block, index))
        else:
            raise refuse(block, index, role, "only text, image and tool_result fit here")
    return blocks


def _image(block: Mapping[str, Any], index: int) -> dict[str, Any]:
    if block.get("url"):
        return {"type": "image", "source": {"type": "url", "url": block["url"]}}
    mime, data = inline_image(block, index)
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}


def _tool_result(block: Mapping[str, Any], index: int) -> dict[str, Any]:
    call_id, text = tool_result_text(block, index)
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    if block.get("isError"):
        out["is_error"] = True
    return out


def _tool_blocks(content: list[ContentBlock], index: int) -> list[dict[str, Any]]:
    """A tool message's results; a result's images (or the notes standing in
    for them) join its ``tool_result`` content, which takes image blocks."""
    blocks: list[dict[str, Any]] = []
    for reply in tool_replies(content, index):
        out = _tool_result(reply.block, index)
        if reply.extras:
            parts: list[dict[str, Any]] = []
            if out["content"]:
                parts.append({"type": "text", "text": out["content"]})
            for extra in reply.extras:
                if extra.get("type") == "image":
                    parts.append(_image(extra, index))
                elif extra.get("text"):
                    parts.append({"type": "text", "text": extra["text"]})
            out["content"] = parts
        blocks.append(out)
    return blocks


def _assistant_blocks(content: list[ContentBlock], index: int) -> list[dict[str, Any]]:
    reasoning: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "thinking":
            reasoning.extend(_reasoning(block, index))
        elif kind == "text":
            if block["text"]:  # type: ignore[typeddict-item]
                rest.append({"type": "text", "text": block["text"]})  # type: ignore[typeddict-item]
        elif kind == "tool_call":
            call_id, name = tool_call_id_and_name(block, index)
            args = block.get("arguments")
            rest.append({"type": "tool_use", "id": call_id, "name": name, "input": args or {}})
        else:
            raise refuse(
                block, index, "assistant", "assistant messages carry text, thinking and tool calls"
            )
    return reasoning + rest  # reasoning opens the turn, as the API returned it


def _reasoning(block: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
    signature = block.get("signature")
    if isinstance(signature, str) and signature.startswith(ENVELOPE_PREFIX):
        return open_envelope(signature, f"messages[{index}]")
    if isinstance(signature, str) and signature:
        return [{"type": "thinking", "thinking": block.get("text", ""), "signature": signature}]
    # Unsigned reasoning (another provider's, or a stream cut before its
    # signature) cannot be verified by the API, which rejects it; earlier
    # turns' thinking is optional there, so it is left out.
    logger.debug("anthropic: unsigned thinking block in messages[%d] left out", index)
    return []


# -- cache breakpoints ------------------------------------------------------------


class PrefixMemory:
    """Per session, the fingerprints of the messages last sent (bounded LRU).

    With the attention gate on, rows only change on a trip (stubs and strips
    are sticky), so the fingerprints match up to the row the gate last left
    untouched; without the gate, history is append-only. Either way the
    common prefix is what the server may have cached."""

    def __init__(self, sessions: int = 64) -> None:
        self._limit = sessions
        self._last: OrderedDict[str, list[int]] = OrderedDict()

    def stable_rows(self, session: str, fingerprints: list[int]) -> int:
        """How many leading rows equal the previous request's; then remember these."""
        previous = self._last.pop(session, None)
        self._last[session] = fingerprints
        if len(self._last) > self._limit:
            self._last.popitem(last=False)
        if previous is None:
            return 0
        same = 0
        for old, new in zip(previous, fingerprints, strict=False):
            if old != new:
                break
            same += 1
        return same


def _fingerprint(message: Mapping[str, Any]) -> int:
    return hash((message["role"], json.dumps(message["content"], separators=(",", ":"))))


def place_breakpoints(
    body: dict[str, Any],
    policy: AnthropicRequestPolicy,
    memory: PrefixMemory | None,
    session: str | None,
    *,
    stable_block: tuple[int, Any] | None = None,
) -> list[str]:
    """Put ``cache_control`` on at most four blocks; returns where (for tests
    and benchmarks): ``"system"``, ``"tools"`` or ``"messages[i]"``.

    In ``"auto"`` mode the stable-prefix breakpoint goes on ``stable_block``
    (wire row, block) when the attention gate supplied one (``(-1, None)``:
    the gate says no message row is unchanged); without it, on the last row
    whose fingerprint matches the session's previous request in ``memory``."""
    mode = policy.cache_breakpoints
    if mode == "off":
        return []
    marker: dict[str, Any] = {"type": "ephemeral"}
    if policy.cache_ttl != "5m":
        marker["ttl"] = policy.cache_ttl
    placed: list[str] = []
    # Tools come before system in the API's prefix order: one marker at the
    # end of the two covers both.
    if body.get("system"):
        body["system"][-1]["cache_control"] = marker
        placed.append("system")
    elif body.get("tools"):
        body["tools"][-1]["cache_control"] = marker
        placed.append("tools")
    messages: list[dict[str, Any]] = body["messages"]
    if mode == "system" or not messages:
        return placed
    count = len(messages)
    # (wire row, the block to mark or None for the row's last markable one)
    wanted: list[tuple[int, Any]]
    if isinstance(mode, tuple):
        rows = [i + count if i < 0 else i for i in mode]
        wanted = [(r, None) for r in rows if 0 <= r < count]
    else:
        wanted = [(count - 1, None)]
        if stable_block is not None:
            row, block = stable_block
            if 0 <= row < count and block.get("type") not in _UNMARKABLE:
                wanted.append((row, block))
        elif memory is not None and session is not None:
            stable = memory.stable_rows(session, [_fingerprint(m) for m in messages])
            # The last unchanged row: its prefix is what the previous request
            # wrote; reading it back needs a breakpoint exactly there when the
            # new tail is longer than the server's lookback window.
            if 0 < stable < count:
                wanted.append((stable - 1, None))
    targets: list[tuple[int, int, dict[str, Any]]] = []
    for row, block in wanted:
        content = messages[row]["content"]
        target = _last_markable(messages[row]) if block is None else block
        if target is not None and all(target is not t[2] for t in targets):
            position = next(i for i, b in enumerate(content) if b is target)
            targets.append((row, position, target))
    for row, _, target in sorted(targets, key=lambda t: (t[0], t[1])):
        if len(placed) >= MAX_BREAKPOINTS:
            break
        target["cache_control"] = marker
        placed.append(f"messages[{row}]")
    return placed


_UNMARKABLE = ("thinking", "redacted_thinking")


def _last_markable(message: dict[str, Any]) -> Any:
    for block in reversed(message["content"]):
        if block.get("type") not in _UNMARKABLE:
            return block
    return None
