"""The provider contract and helpers that build normalized provider events.

A provider turns one :class:`~prism.contracts.ProviderRequest` into an async
stream of :data:`~prism.contracts.ProviderEvent` dicts. Failures are *yielded*
as an ``error`` event carrying an ``ErrorInfo`` with a safe ``code``; the
runtime treats a provider that raises instead as an error with code
``"provider_exception"``. Cancellation is anyio cancellation: a provider must
not swallow it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from prism.contracts import (
    ContentDeltaEvent,
    DoneEvent,
    ErrorInfo,
    ProviderErrorEvent,
    ProviderEvent,
    ProviderRequest,
    ThinkingDeltaEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    Usage,
    UsageEvent,
)
from prism.errors import error_info

if TYPE_CHECKING:
    from prism.security.redaction import SecretRedactor

PROVIDER_EVENT_TYPES: Final[frozenset[str]] = frozenset(
    {"content_delta", "thinking_delta", "tool_call_delta", "tool_call", "usage", "done", "error"}
)
TERMINAL_EVENT_TYPES: Final[frozenset[str]] = frozenset({"done", "error"})
USAGE_FIELDS: Final[frozenset[str]] = frozenset(
    {
        "inputTokens",
        "outputTokens",
        "cacheReadTokens",
        "cacheWriteTokens",
        "reasoningTokens",
        "totalTokens",
    }
)
_USAGE_FROM_SNAKE: Final[dict[str, str]] = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_read_tokens": "cacheReadTokens",
    "cache_write_tokens": "cacheWriteTokens",
    "reasoning_tokens": "reasoningTokens",
    "total_tokens": "totalTokens",
}
PROVIDER_EXCEPTION_CODE: Final[str] = "provider_exception"


@runtime_checkable
class AIProvider(Protocol):
    """What the runtime needs from a model backend.

    ``generate`` is usually an ``async def`` generator. It must end with
    exactly one terminal event (``done`` or ``error``) unless cancelled.
    """

    name: str

    def generate(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]: ...


def provider_text_delta(text: str) -> ContentDeltaEvent:
    _require_str("text", text)
    return {"type": "content_delta", "text": text}


def provider_thinking_delta(text: str, signature: str | None = None) -> ThinkingDeltaEvent:
    _require_str("text", text)
    event: ThinkingDeltaEvent = {"type": "thinking_delta", "text": text}
    if signature is not None:
        _require_str("signature", signature)
        event["signature"] = signature
    return event


def provider_tool_call(
    id: str, name: str, arguments: Mapping[str, Any] | None = None
) -> ToolCallEvent:
    """A complete tool call (as opposed to streamed ``tool_call_delta`` fragments)."""
    _require_str("id", id)
    _require_str("name", name)
    if arguments is not None and not isinstance(arguments, Mapping):
        raise TypeError(f"tool call arguments must be a mapping, got {type(arguments).__name__}")
    return {
        "type": "tool_call",
        "toolCall": {"id": id, "name": name, "arguments": dict(arguments or {})},
    }


def provider_tool_call_delta(
    index: int,
    id: str | None = None,
    name: str | None = None,
    arguments_delta: str | None = None,
) -> ToolCallDeltaEvent:
    """One fragment of a streamed tool call; fragments sharing ``index`` join."""
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ValueError(f"tool call delta index must be a non-negative int, got {index!r}")
    event: ToolCallDeltaEvent = {"type": "tool_call_delta", "index": index}
    if id is not None:
        _require_str("id", id)
        event["id"] = id
    if name is not None:
        _require_str("name", name)
        event["name"] = name
    if arguments_delta is not None:
        _require_str("arguments_delta", arguments_delta)
        event["argumentsDelta"] = arguments_delta
    return event


def provider_usage(usage: Mapping[str, int] | None = None, **fields: int) -> UsageEvent:
    """``provider_usage(input_tokens=3)`` or ``provider_usage({"inputTokens": 3})``."""
    return {"type": "usage", "usage": normalize_usage({**(usage or {}), **fields})}


def provider_done(
    stop_reason: str | None = None, usage: Mapping[str, int] | None = None
) -> DoneEvent:
    event: DoneEvent = {"type": "done"}
    if stop_reason is not None:
        _require_str("stop_reason", stop_reason)
        event["stopReason"] = stop_reason
    if usage is not None:
        event["usage"] = normalize_usage(usage)
    return event


def provider_error(
    message: str,
    code: str | None = None,
    *,
    status: int | None = None,
    retryable: bool | None = None,
    retry_after_ms: int | None = None,
    details: Mapping[str, Any] | None = None,
) -> ProviderErrorEvent:
    """An ``error`` event. Put only safe text in ``message``: it reaches events."""
    _require_str("message", message)
    info: ErrorInfo = {"message": message}
    if code is not None:
        _require_str("code", code)
        info["code"] = code
    if status is not None:
        info["status"] = _non_negative_int("status", status)
    if retryable is not None:
        info["retryable"] = bool(retryable)
    if retry_after_ms is not None:
        info["retryAfterMs"] = _non_negative_int("retry_after_ms", retry_after_ms)
    if details is not None:
        info["details"] = dict(details)
    return {"type": "error", "error": info}


def error_info_from_exception(error: BaseException, redactor: SecretRedactor) -> ErrorInfo:
    """ErrorInfo for a provider that raised instead of yielding ``error``:
    :func:`prism.errors.error_info` with the ``provider_exception`` code, so
    the text is always redacted (pass ``NOOP_REDACTOR`` when there are no secrets)."""
    return error_info(error, redactor, code=PROVIDER_EXCEPTION_CODE)


def normalize_usage(usage: Mapping[str, Any]) -> Usage:
    """Accept camelCase or snake_case token counts; reject unknown keys and non-ints."""
    if not isinstance(usage, Mapping):
        raise TypeError(f"usage must be a mapping, got {type(usage).__name__}")
    out: dict[str, int] = {}
    for key, value in usage.items():
        wire = _USAGE_FROM_SNAKE.get(key, key)
        if wire not in USAGE_FIELDS:
            raise ValueError(f"unknown usage field {key!r}; expected one of {sorted(USAGE_FIELDS)}")
        out[wire] = _non_negative_int(key, value)
    return out  # type: ignore[return-value]


def validate_provider_event(event: Any) -> ProviderEvent:
    """Check one event's shape; raise ``ValueError`` naming the offending field."""
    if not isinstance(event, dict):
        raise ValueError(f"provider event must be a dict, got {type(event).__name__}")
    kind = event.get("type")
    if kind not in PROVIDER_EVENT_TYPES:
        raise ValueError(
            f"provider event has unknown type {kind!r}; expected one of {sorted(PROVIDER_EVENT_TYPES)}"
        )
    if kind in ("content_delta", "thinking_delta") and not isinstance(event.get("text"), str):
        raise ValueError(f"{kind} event needs a string 'text'")
    if kind == "tool_call_delta":
        index = event.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise ValueError("tool_call_delta event needs a non-negative int 'index'")
        for key in ("id", "name", "argumentsDelta"):
            if key in event and not isinstance(event[key], str):
                raise ValueError(f"tool_call_delta '{key}' must be a string")
    if kind == "tool_call":
        call = event.get("toolCall")
        if not isinstance(call, dict):
            raise ValueError("tool_call event needs a 'toolCall' dict")
        if not isinstance(call.get("id"), str) or not isinstance(call.get("name"), str):
            raise ValueError("tool_call event 'toolCall' needs string 'id' and 'name'")
        if not isinstance(call.get("arguments"), dict):
            raise ValueError("tool_call event 'toolCall.arguments' must be a dict")
    if kind == "usage":
        if not isinstance(event.get("usage"), dict):
            raise ValueError("usage event needs a 'usage' dict")
        normalize_usage(event["usage"])
    if kind == "done" and "usage" in event:
        normalize_usage(event["usage"])
    if kind == "error":
        info = event.get("error")
        if not isinstance(info, dict) or not isinstance(info.get("message"), str):
            raise ValueError("error event needs an 'error' dict with a string 'message'")
    return event  # type: ignore[return-value]


def _require_str(field: str, value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a string, got {type(value).__name__}")


def _non_negative_int(field: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{field} must be a non-negative int, got {value!r}")
    return value
