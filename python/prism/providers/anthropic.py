"""Anthropic Messages streaming provider (httpx + httpx-sse, no SDK).

Streams text, thinking (with signatures; redacted thinking carried back
verbatim), tool use with partial JSON, usage with cache reads and writes,
and classifies errors (529 overload and 429 retryable, with Retry-After).
``cache_control`` breakpoints go where the request's stable prefix ends
(see :class:`AnthropicRequestPolicy` and docs/providers.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from prism.contracts import ErrorInfo, JsonValue, ModelConfig, ProviderEvent, ProviderRequest, Usage
from prism.providers._anthropic_request import (
    AnthropicRequestPolicy,
    PrefixMemory,
    build_messages_body,
    reasoning_envelope,
)
from prism.providers._http_stream import (
    Decoder,
    HttpStreamProvider,
    StreamFailed,
    closing_events,
    credential_source,
    fail,
    logger,
    malformed,
    object_arguments,
    parse_event,
    stall_timeout_of,
    stream_error,
)
from prism.security.credentials import CredentialSource
from prism.security.redaction import SecretRedactor

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicProvider",
    "AnthropicRequestPolicy",
    "create_anthropic_provider",
    "map_anthropic_usage",
]

ANTHROPIC_VERSION = "2023-06-01"

# Error ``type`` inside an Anthropic error object -> the HTTP status it stands
# for, so an in-stream error is classified like the same error over HTTP.
_ERROR_STATUS = {
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
}


def map_anthropic_usage(raw: Mapping[str, Any]) -> Usage:
    """Messages usage -> Prism ``Usage``. The API's ``input_tokens`` leaves out
    cached tokens; Prism's ``inputTokens`` is the whole prompt, so cache
    creation and cache reads are added back and also reported on their own."""

    def count(key: str) -> int:
        value = raw.get(key)
        return (
            max(0, int(value))
            if isinstance(value, int | float) and not isinstance(value, bool)
            else 0
        )

    fresh, written, read = (
        count("input_tokens"),
        count("cache_creation_input_tokens"),
        count("cache_read_input_tokens"),
    )
    output = count("output_tokens")
    usage: Usage = {
        "inputTokens": fresh + written + read,
        "outputTokens": output,
        "totalTokens": fresh + written + read + output,
    }
    if read:
        usage["cacheReadTokens"] = read
    if written:
        usage["cacheWriteTokens"] = written
    return usage


class _Block:
    __slots__ = ("call_index", "data", "id", "json", "kind", "name", "signature", "text")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.text: list[str] = []
        self.json: list[str] = []
        self.signature: str | None = None
        self.data: str | None = None
        self.id = ""
        self.name = ""
        self.call_index = -1


class _MessagesDecoder(Decoder):
    """Anthropic's typed events -> Prism events."""

    def __init__(self, name: str, redactor: SecretRedactor) -> None:
        self.name = name
        self.redactor = redactor
        self.blocks: dict[int, _Block] = {}
        self.reasoning: list[dict[str, Any]] = []
        self.raw_usage: dict[str, Any] = {}
        self.usage: Usage | None = None
        self.stop_reason: str | None = None
        self.started = False
        self.stopped = False
        self.calls = 0

    def feed(self, event: str, data: str) -> list[ProviderEvent]:
        payload = parse_event(self.name, data)
        kind = payload.get("type", event)
        handler = _HANDLERS.get(kind)
        if handler is None:
            # New event types appear over time; skipping one loses nothing we model.
            logger.debug("%s: skipped unknown stream event type %r", self.name, kind)
            return []
        return handler(self, payload)

    def on_message_start(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        self.started = True
        message = payload.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
        self._merge_usage(usage)
        return []

    def on_block_start(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        index = payload.get("index")
        raw = payload.get("content_block")
        if not isinstance(index, int) or not isinstance(raw, dict):
            raise malformed(self.name, "content_block_start without index or block")
        block = self.blocks[index] = _Block(str(raw.get("type")))
        if block.kind == "tool_use":
            block.id, block.name = str(raw.get("id") or ""), str(raw.get("name") or "")
            block.call_index = self.calls
            self.calls += 1
            if not block.name:
                raise fail(f"{self.name}: tool_use block #{index} has no name", "invalid_tool_call")
            event: dict[str, Any] = {
                "type": "tool_call_delta",
                "index": block.call_index,
                "name": block.name,
            }
            if block.id:
                event["id"] = block.id
            return [event]  # type: ignore[list-item]
        if block.kind == "redacted_thinking":
            block.data = raw.get("data") if isinstance(raw.get("data"), str) else None
        elif block.kind in ("text", "thinking"):
            initial = raw.get("text") if block.kind == "text" else raw.get("thinking")
            if isinstance(initial, str) and initial:
                block.text.append(initial)
                if block.kind == "text":
                    return [{"type": "content_delta", "text": initial}]
                return [{"type": "thinking_delta", "text": initial}]
        return []

    def on_block_delta(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        block = self.blocks.get(payload.get("index"))  # type: ignore[arg-type]
        delta = payload.get("delta")
        if block is None or not isinstance(delta, dict):
            raise malformed(self.name, "content_block_delta for an unopened block")
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            block.text.append(delta["text"])
            return [{"type": "content_delta", "text": delta["text"]}]
        if kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block.text.append(delta["thinking"])
            return [{"type": "thinking_delta", "text": delta["thinking"]}]
        if kind == "signature_delta":
            signature = delta.get("signature")
            if not isinstance(signature, str) or not signature:
                raise fail(
                    f"{self.name}: thinking block has an invalid signature "
                    f"({type(signature).__name__})",
                    "invalid_thinking_signature",
                    retryable=True,
                )
            block.signature = (block.signature or "") + signature
            return []
        if (
            kind == "input_json_delta"
            and block.kind == "tool_use"
            and isinstance(delta.get("partial_json"), str)
        ):
            # Server-side tools (server_tool_use) stream input too; they run
            # on the server, so only client tool_use becomes a Prism call.
            block.json.append(delta["partial_json"])
            return [
                {
                    "type": "tool_call_delta",
                    "index": block.call_index,
                    "argumentsDelta": delta["partial_json"],
                }
            ]
        logger.debug("%s: skipped content delta type %r", self.name, kind)
        return []

    def on_block_stop(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        block = self.blocks.get(payload.get("index"))  # type: ignore[arg-type]
        if block is None:
            return []
        if block.kind == "tool_use":
            arguments = object_arguments("".join(block.json))
            if arguments is None or not block.id:
                # The call stays as its deltas; the runtime answers it with an
                # invalid_arguments tool result so the model can correct itself.
                return []
            return [
                {
                    "type": "tool_call",
                    "toolCall": {"id": block.id, "name": block.name, "arguments": arguments},
                }
            ]
        if block.kind == "thinking":
            if block.signature is None:
                logger.debug("%s: thinking block without signature", self.name)
                return []
            self.reasoning.append(
                {"type": "thinking", "thinking": "".join(block.text), "signature": block.signature}
            )
        elif block.kind == "redacted_thinking":
            if block.data is None:
                raise malformed(self.name, "redacted_thinking block without data")
            self.reasoning.append({"type": "redacted_thinking", "data": block.data})
        else:
            return []
        # The last signature of a turn wins in the runtime, so each one
        # carries every reasoning block so far: a lone signed block as itself,
        # anything more in an envelope that is sent back block by block.
        only = self.reasoning[0] if len(self.reasoning) == 1 else None
        if only is not None and only["type"] == "thinking":
            signature = only["signature"]
        else:
            signature = reasoning_envelope(self.reasoning)
        return [{"type": "thinking_delta", "text": "", "signature": signature}]

    def on_message_delta(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        delta = payload.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
            self.stop_reason = delta["stop_reason"]
        self._merge_usage(payload.get("usage"))
        return []

    def on_message_stop(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        self.stopped = True
        return []

    def on_ping(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        return []

    def on_error(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        raise _stream_error(self.name, payload.get("error"), self.redactor)

    def _merge_usage(self, raw: Any) -> None:
        if isinstance(raw, dict):
            # Later events repeat counts cumulatively: the last value wins.
            self.raw_usage.update({k: v for k, v in raw.items() if v is not None})
            self.usage = map_anthropic_usage(self.raw_usage)

    def finish(self) -> list[ProviderEvent]:
        if not self.stopped:
            what = "message_start" if not self.started else "message_stop"
            raise fail(
                f"{self.name}: stream ended before {what}", "stream_incomplete", retryable=True
            )
        return closing_events(self.name, self.stop_reason, self.usage)


_HANDLERS: dict[str, Callable[[_MessagesDecoder, dict[str, Any]], list[ProviderEvent]]] = {
    "message_start": _MessagesDecoder.on_message_start,
    "content_block_start": _MessagesDecoder.on_block_start,
    "content_block_delta": _MessagesDecoder.on_block_delta,
    "content_block_stop": _MessagesDecoder.on_block_stop,
    "message_delta": _MessagesDecoder.on_message_delta,
    "message_stop": _MessagesDecoder.on_message_stop,
    "ping": _MessagesDecoder.on_ping,
    "error": _MessagesDecoder.on_error,
}


def _stream_error(provider: str, err: Any, redactor: SecretRedactor) -> StreamFailed:
    err = err if isinstance(err, dict) else {}
    kind = err.get("type") if isinstance(err.get("type"), str) else "error"
    message = err.get("message") if isinstance(err.get("message"), str) else ""
    return stream_error(provider, kind, message, _ERROR_STATUS.get(kind), redactor)


def classify_anthropic_error(info: ErrorInfo, body: str) -> ErrorInfo:
    """A 400 about a thinking block's signature gets its own code: the stored
    reasoning no longer verifies (edited, or from another key or model), and
    sending the same history again fails the same way."""
    if info.get("status") == 400 and "signature" in body and "thinking" in body:
        return {**info, "code": "invalid_thinking_signature", "retryable": False}
    return info


class AnthropicProvider(HttpStreamProvider):
    """An ``AIProvider`` for the Anthropic Messages API. Build it with
    :func:`create_anthropic_provider`."""

    supports_response_format = False

    def __init__(
        self, *, request_policy: AnthropicRequestPolicy, version: str, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.request_policy = request_policy
        self._headers.setdefault("anthropic-version", version)
        self._prefixes = PrefixMemory()

    def build_body(self, request: ProviderRequest) -> dict[str, Any]:
        """The JSON body ``generate`` sends (raises ``BodyError``). Remembers
        the request's rows for the next breakpoint placement of its session."""
        return build_messages_body(
            request,
            policy=self.request_policy,
            default_options=self._default_options,
            prefix_memory=self._prefixes,
        )

    def auth_headers(self, token: str) -> dict[str, str]:
        return {"x-api-key": token}

    def decoder(self, request: ProviderRequest, redactor: SecretRedactor) -> Decoder:
        return _MessagesDecoder(self.name, redactor)

    def classify_status(self, info: ErrorInfo, body: str) -> ErrorInfo:
        return classify_anthropic_error(info, body)


def create_anthropic_provider(
    *,
    api_key: str | None = None,
    credential: CredentialSource | None = None,
    base_url: str = "https://api.anthropic.com",
    http_client: httpx.AsyncClient | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: httpx.Timeout | float | None = None,
    name: str = "anthropic",
    request_policy: AnthropicRequestPolicy | None = None,
    default_options: Mapping[str, JsonValue] | None = None,
    redactor: SecretRedactor,
    path: str = "/v1/messages",
    version: str = ANTHROPIC_VERSION,
    models: Sequence[ModelConfig] = (),
    clock: Callable[[], float] = time.time,
) -> AnthropicProvider:
    """An Anthropic Messages provider. ``api_key`` or ``credential`` (resolved
    per request) is sent as ``x-api-key``; ``redactor`` is the agent's
    :class:`~prism.security.redaction.SecretRedactor`, applied to every error
    text after the provider's own key redaction."""
    return AnthropicProvider(
        request_policy=request_policy or AnthropicRequestPolicy(),
        version=version,
        base_url=base_url,
        path=path,
        credential=credential_source(api_key, credential),
        http_client=http_client,
        headers=headers,
        timeout=timeout,
        name=name,
        default_options=default_options,
        redactor=redactor,
        credential_secrets=(api_key,) if api_key is not None else (),
        models=models,
        clock=clock,
        stall_timeout=stall_timeout_of(timeout),
    )
