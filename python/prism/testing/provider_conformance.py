"""Network-free conformance assertions for ``AIProvider`` implementations.

Each helper raises ``AssertionError`` with a message that names the event,
message or field at fault, and never echoes secrets or content payloads, so
it is safe to see in CI logs. They work with any test runner.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, cast

import anyio

from prism.contracts import ProviderEvent, ProviderRequest, ToolCall, Usage
from prism.providers.base import TERMINAL_EVENT_TYPES, AIProvider, validate_provider_event

__all__ = [
    "assert_abort_is_observed",
    "assert_no_secret_leak",
    "assert_provider_stream_conforms",
    "assert_serialized_request_covers_content",
    "assert_tool_call_deltas_reconstruct",
    "assert_usage_accounting",
    "collect_provider_events",
]


async def collect_provider_events(
    provider: AIProvider, request: ProviderRequest
) -> list[ProviderEvent]:
    """Every event of one ``generate`` call, in stream order."""
    events: list[ProviderEvent] = []
    async with aclosing(provider.generate(request)) as stream:  # type: ignore[type-var]
        async for event in stream:
            events.append(event)
    return events


async def assert_provider_stream_conforms(
    provider: AIProvider,
    request: ProviderRequest,
    *,
    expect_text: str | None = None,
    expect_usage: Mapping[str, int] | None = None,
    expect_stop_reason: str | None = None,
    allow_error: bool = False,
) -> list[ProviderEvent]:
    """Collect one stream and check it: every event well-formed, exactly one
    terminal event (``done``/``error``) and it is last; an ``error`` terminal
    fails unless ``allow_error``. Optional text/usage/stop-reason expectations
    are compared against the stream. Returns the events."""
    events = await collect_provider_events(provider, request)
    if not events:
        raise AssertionError("provider stream produced no events; it must end with done or error")
    for index, event in enumerate(events):
        try:
            validate_provider_event(event)
        except ValueError as error:
            raise AssertionError(f"event {index} is malformed: {error}") from None
    terminals = [i for i, event in enumerate(events) if event["type"] in TERMINAL_EVENT_TYPES]
    if not terminals:
        raise AssertionError(
            f"provider stream ended without a terminal event (last was {events[-1]['type']!r})"
        )
    if terminals != [len(events) - 1]:
        raise AssertionError(
            f"terminal event at index {terminals[0]} is not the last of {len(events)} events"
            if terminals[0] != len(events) - 1
            else f"provider stream has {len(terminals)} terminal events; expected exactly one"
        )
    last = events[-1]
    if last["type"] == "error" and not allow_error:
        code = last["error"].get("code", "")
        raise AssertionError(f"provider stream ended with an error event (code {code!r})")
    if expect_text is not None:
        text = "".join(e["text"] for e in events if e["type"] == "content_delta")
        if text != expect_text:
            raise AssertionError(
                f"streamed text differs from the expected text ({len(text)} vs {len(expect_text)} chars)"
            )
    if expect_usage is not None:
        assert_usage_accounting(events, expect_usage)
    if expect_stop_reason is not None:
        stop = last.get("stopReason") if last["type"] == "done" else None
        if stop != expect_stop_reason:
            raise AssertionError(f"stop reason {stop!r} != expected {expect_stop_reason!r}")
    return events


async def assert_abort_is_observed(
    provider: AIProvider, request: ProviderRequest, *, after_events: int = 0
) -> list[ProviderEvent]:
    """Cancel generation (before the first event by default, or right after
    ``after_events`` events) and check the provider stops: no further event
    is produced and the cancellation is not swallowed. Returns the events
    received before the cancel."""
    received: list[ProviderEvent] = []
    late: list[str] = []
    with anyio.CancelScope() as scope:
        if after_events == 0:
            scope.cancel()
        async with aclosing(provider.generate(request)) as stream:  # type: ignore[type-var]
            async for event in stream:
                if scope.cancel_called:
                    late.append(str(event.get("type")))
                    continue
                received.append(event)
                if len(received) >= after_events:
                    scope.cancel()
    if late:
        raise AssertionError(
            f"provider produced {len(late)} event(s) after cancellation ({', '.join(late)})"
        )
    if not scope.cancel_called:
        raise AssertionError(
            f"provider stream ended after {len(received)} event(s), before the cancel point"
            f" ({after_events} events); pick a smaller after_events"
        )
    if not scope.cancelled_caught:
        raise AssertionError(
            "provider finished without observing cancellation; it must await (a checkpoint)"
            " between events so anyio cancellation can stop it"
        )
    return received


def assert_tool_call_deltas_reconstruct(
    events: Iterable[ProviderEvent], expected: Sequence[Mapping[str, Any]]
) -> list[ToolCall]:
    """Join ``tool_call_delta`` fragments by index (id/name from the first
    fragment that has them, argument text concatenated and parsed as JSON) and
    compare with ``expected`` ({id, name, arguments} in index order)."""
    parts: dict[int, dict[str, Any]] = {}
    for event in events:
        if event["type"] != "tool_call_delta":
            continue
        slot = parts.setdefault(event["index"], {"id": None, "name": None, "arguments": []})
        for key in ("id", "name"):
            if slot[key] is None and event.get(key):
                slot[key] = event[key]
        if "argumentsDelta" in event:
            slot["arguments"].append(event["argumentsDelta"])
    calls: list[ToolCall] = []
    for index in sorted(parts):
        slot = parts[index]
        if not slot["id"] or not slot["name"]:
            raise AssertionError(f"streamed tool call at index {index} has no id or no name")
        text = "".join(slot["arguments"]) or "{}"
        try:
            arguments = json.loads(text)
        except ValueError as error:
            raise AssertionError(
                f"streamed tool call at index {index} has arguments that are not valid JSON"
                f" (at char {getattr(error, 'pos', '?')})"
            ) from None
        if not isinstance(arguments, dict):
            raise AssertionError(f"streamed tool call at index {index} has non-object arguments")
        calls.append({"id": slot["id"], "name": slot["name"], "arguments": arguments})
    if len(calls) != len(expected):
        raise AssertionError(f"reconstructed {len(calls)} tool call(s), expected {len(expected)}")
    for position, (call, want) in enumerate(zip(calls, expected, strict=True)):
        for key in ("id", "name", "arguments"):
            if key in want and call[key] != want[key]:  # type: ignore[literal-required]
                raise AssertionError(
                    f"tool call {position}: {key} does not match the expected value"
                )
    return calls


def assert_usage_accounting(events: Iterable[ProviderEvent], expected: Mapping[str, int]) -> Usage:
    """Merge ``usage`` events and ``done.usage`` (later values win) and check
    each expected field, including cache read/write tokens."""
    merged: dict[str, int] = {}
    seen = False
    for event in events:
        usage = event.get("usage") if event["type"] in ("usage", "done") else None
        if isinstance(usage, Mapping):
            seen = True
            merged.update(cast(Mapping[str, int], usage))
    if not seen:
        raise AssertionError("stream reported no usage (no usage event and no done.usage)")
    for field, want in expected.items():
        got = merged.get(field)
        if got != want:
            raise AssertionError(f"usage field {field}: expected {want}, got {got}")
    return merged  # type: ignore[return-value]


def _leaves(value: Any, out: list[str], depth: int = 0) -> None:
    """Primitive leaves of a JSON-ish value; JSON-encoded strings (such as
    tool-call arguments on many wires) are opened up too."""
    if depth > 64:
        return
    if isinstance(value, Mapping):
        for item in value.values():
            _leaves(item, out, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _leaves(item, out, depth + 1)
    elif isinstance(value, str):
        out.append(value)
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and len(stripped) > 1:
            try:
                _leaves(json.loads(stripped), out, depth + 1)
            except ValueError:
                pass
    elif isinstance(value, bool) or value is None:
        out.append(json.dumps(value))
    elif isinstance(value, int | float):
        out.append(json.dumps(value))


def _canaries(block: Mapping[str, Any]) -> list[str]:
    kind = block.get("type")
    leaves: list[str] = []
    if kind in ("text", "thinking"):
        leaves.append(str(block.get("text", "")))
    elif kind == "image":
        leaves.append(str(block.get("url") or block.get("data") or ""))
    elif kind == "tool_call":
        leaves += [str(block.get("id", "")), str(block.get("name", ""))]
        _leaves(block.get("arguments", {}), leaves)
    elif kind == "tool_result":
        leaves.append(str(block.get("toolCallId", "")))
        _leaves(block.get("result"), leaves)
    return [leaf for leaf in leaves if leaf and leaf not in ("null", "true", "false")]


def assert_serialized_request_covers_content(
    request: ProviderRequest, body: Any, *, unsupported: Iterable[str] = ()
) -> None:
    """Fail if a content block of ``request`` left no trace in the serialized
    ``body`` (a dict, list, or JSON string). Each block contributes canaries
    (text, image url/data, tool call id/name/argument leaves, tool result id
    and result leaves); block types in ``unsupported`` are skipped."""
    if isinstance(body, str | bytes):
        try:
            body = json.loads(body)
        except ValueError:
            raise AssertionError("serialized body is not valid JSON") from None
    haystack_parts: list[str] = []
    _leaves(body, haystack_parts)
    haystack = "\x00".join(haystack_parts)
    skipped = set(unsupported)
    for m_index, message in enumerate(request.get("messages", [])):
        for b_index, block in enumerate(message.get("content", [])):
            kind = block.get("type")
            if kind in skipped:
                continue
            for canary in _canaries(block):
                if canary not in haystack:
                    raise AssertionError(
                        f"serialized request dropped content of a {kind} block"
                        f" (message {m_index}, block {b_index})"
                    )


def assert_no_secret_leak(events: Iterable[Any], secrets: Iterable[str]) -> None:
    """Fail if any known secret appears in any event (stringified as JSON).
    The message names the secret by position and length only."""
    secret_list = [secret for secret in secrets if secret]
    for e_index, event in enumerate(events):
        text = json.dumps(event, ensure_ascii=False, default=str)
        for s_index, secret in enumerate(secret_list):
            if secret in text:
                kind = event.get("type") if isinstance(event, Mapping) else type(event).__name__
                raise AssertionError(
                    f"secret #{s_index + 1} ({len(secret)} chars) leaked in event {e_index}"
                    f" (type {kind!r})"
                )
