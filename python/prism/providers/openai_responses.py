"""OpenAI Responses streaming provider (httpx + httpx-sse, no SDK).

Stateless by default (``store: false``): Prism sends the whole history each
turn. Reasoning items with encrypted content are carried across turns
(see :mod:`prism.providers._responses_request`), function calls and their
outputs map to Prism tool calls and results, and usage reports cached input.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from prism.contracts import ErrorInfo, JsonValue, ModelConfig, ProviderEvent, ProviderRequest, Usage
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
from prism.providers._responses_request import (
    ResponsesRequestPolicy,
    build_responses_body,
    reasoning_envelope,
)
from prism.security.credentials import CredentialSource
from prism.security.redaction import SecretRedactor

if TYPE_CHECKING:
    import httpx

__all__ = [
    "OpenAIResponsesProvider",
    "ResponsesRequestPolicy",
    "create_openai_responses_provider",
    "map_responses_usage",
]

# Error codes the Responses API puts in ``response.failed`` / ``error`` events.
_CODE_STATUS = {"rate_limit_exceeded": 429, "server_error": 500, "server_is_overloaded": 503}


def map_responses_usage(raw: Mapping[str, Any]) -> Usage:
    """Responses usage -> Prism ``Usage``: ``input_tokens`` already includes
    the cached ones (``input_tokens_details.cached_tokens``), and
    ``output_tokens`` the reasoning ones."""

    def count(source: Any, key: str) -> int:
        value = source.get(key) if isinstance(source, Mapping) else None
        return (
            max(0, int(value))
            if isinstance(value, int | float) and not isinstance(value, bool)
            else 0
        )

    prompt, output = count(raw, "input_tokens"), count(raw, "output_tokens")
    usage: Usage = {
        "inputTokens": prompt,
        "outputTokens": output,
        "totalTokens": count(raw, "total_tokens") or prompt + output,
    }
    cached = count(raw.get("input_tokens_details"), "cached_tokens")
    reasoning = count(raw.get("output_tokens_details"), "reasoning_tokens")
    if cached:
        usage["cacheReadTokens"] = cached
    if reasoning:
        usage["reasoningTokens"] = reasoning
    return usage


class _ResponsesDecoder(Decoder):
    def __init__(self, name: str, model: str, redactor: SecretRedactor) -> None:
        self.name = name
        self.model = model
        self.redactor = redactor
        self.usage: Usage | None = None
        self.calls: dict[int, tuple[int, str, str]] = {}  # output_index -> (call index, id, name)
        self.reasoning: list[dict[str, Any]] = []
        self.stop_reason: str | None = None
        self.completed = False

    def feed(self, event: str, data: str) -> list[ProviderEvent]:
        payload = parse_event(self.name, data)
        kind = payload.get("type", event)
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            return [{"type": "content_delta", "text": _text(payload, "delta")}]
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [{"type": "thinking_delta", "text": _text(payload, "delta")}]
        if kind == "response.function_call_arguments.delta":
            slot = self.calls.get(payload.get("output_index"))  # type: ignore[arg-type]
            if slot is None:
                raise malformed(self.name, "arguments for an unopened function call")
            return [
                {
                    "type": "tool_call_delta",
                    "index": slot[0],
                    "argumentsDelta": _text(payload, "delta"),
                }
            ]
        if kind == "response.output_item.added":
            return self._item_added(payload)
        if kind == "response.output_item.done":
            return self._item_done(payload)
        if kind in ("response.completed", "response.incomplete"):
            return self._completed(payload)
        if kind == "response.failed":
            response = payload.get("response")
            raise self._failure(
                (response or {}).get("error") if isinstance(response, dict) else None
            )
        if kind == "error":
            raise self._failure(payload)
        if kind.startswith("response."):
            return []  # lifecycle and "done" events repeat what the deltas said
        logger.debug("%s: skipped unknown stream event type %r", self.name, kind)
        return []

    def _item_added(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        item = payload.get("item")
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return []
        position = payload.get("output_index")
        if not isinstance(position, int):
            raise malformed(self.name, "output item without output_index")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise fail(f"{self.name}: function call #{position} has no name", "invalid_tool_call")
        raw_id = item.get("call_id")
        call_id = raw_id if isinstance(raw_id, str) else ""
        index = len(self.calls)
        self.calls[position] = (index, call_id, name)
        event: dict[str, Any] = {"type": "tool_call_delta", "index": index, "name": name}
        if call_id:
            event["id"] = call_id
        return [event]  # type: ignore[list-item]

    def _item_done(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        item = payload.get("item")
        if not isinstance(item, dict):
            return []
        if item.get("type") == "function_call":
            slot = self.calls.get(payload.get("output_index"))  # type: ignore[arg-type]
            arguments = object_arguments(item.get("arguments"))
            call_id = item.get("call_id") or (slot[1] if slot else "")
            if slot is None or arguments is None or not call_id:
                return []  # stays as deltas; the runtime answers invalid_arguments
            return [
                {
                    "type": "tool_call",
                    "toolCall": {"id": call_id, "name": slot[2], "arguments": arguments},
                }
            ]
        if item.get("type") == "reasoning" and isinstance(item.get("id"), str):
            kept = {"type": "reasoning", "id": item["id"], "summary": item.get("summary") or []}
            kept["encrypted_content"] = item.get("encrypted_content")
            self.reasoning.append(kept)
            envelope = reasoning_envelope(self.model, self.reasoning)
            return [{"type": "thinking_delta", "text": "", "signature": envelope}]
        return []

    def _completed(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        self.completed = True
        response = payload.get("response")
        response = response if isinstance(response, dict) else {}
        raw_usage = response.get("usage")
        if isinstance(raw_usage, Mapping):
            self.usage = map_responses_usage(raw_usage)
        details = response.get("incomplete_details")
        if response.get("status") == "incomplete" and isinstance(details, dict):
            self.stop_reason = str(details.get("reason") or "incomplete")
        elif self.calls:
            self.stop_reason = "tool_calls"
        else:
            self.stop_reason = "stop"
        return []

    def _failure(self, err: Any) -> StreamFailed:
        err = err if isinstance(err, dict) else {}
        code = err.get("code") if isinstance(err.get("code"), str) else "error"
        message = err.get("message") if isinstance(err.get("message"), str) else ""
        return stream_error(
            self.name,
            code,
            message,
            _CODE_STATUS.get(code),
            self.redactor,
            otherwise=_classify_code(code, message),
        )

    def finish(self) -> list[ProviderEvent]:
        if not self.completed:
            raise fail(
                f"{self.name}: stream ended before response.completed",
                "stream_incomplete",
                retryable=True,
            )
        return closing_events(self.name, self.stop_reason, self.usage)


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _classify_code(code: str, message: str) -> str:
    text = f"{code} {message}".lower()
    if "encrypted" in text and ("reasoning" in text or "content" in text):
        return "invalid_reasoning_item"
    return "provider_stream_error"


def classify_responses_error(info: ErrorInfo, body: str) -> ErrorInfo:
    """A 400 that rejects a reasoning item's encrypted content (written by
    another model or organisation, or damaged) gets its own code: the same
    history fails the same way, so it is not retryable."""
    if info.get("status") == 400 and _classify_code("", body) == "invalid_reasoning_item":
        return {**info, "code": "invalid_reasoning_item", "retryable": False}
    return info


class OpenAIResponsesProvider(HttpStreamProvider):
    """An ``AIProvider`` for the OpenAI Responses API. Build it with
    :func:`create_openai_responses_provider`."""

    def __init__(self, *, request_policy: ResponsesRequestPolicy, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.request_policy = request_policy

    def build_body(self, request: ProviderRequest) -> dict[str, Any]:
        """The JSON body ``generate`` sends (raises ``BodyError``)."""
        return build_responses_body(
            request, policy=self.request_policy, default_options=self._default_options
        )

    def decoder(self, request: ProviderRequest, redactor: SecretRedactor) -> Decoder:
        return _ResponsesDecoder(self.name, str(request["model"]["model"]), redactor)

    def classify_status(self, info: ErrorInfo, body: str) -> ErrorInfo:
        return classify_responses_error(info, body)


def create_openai_responses_provider(
    *,
    api_key: str | None = None,
    credential: CredentialSource | None = None,
    base_url: str = "https://api.openai.com/v1",
    http_client: httpx.AsyncClient | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: httpx.Timeout | float | None = None,
    name: str = "openai-responses",
    request_policy: ResponsesRequestPolicy | None = None,
    default_options: Mapping[str, JsonValue] | None = None,
    redactor: SecretRedactor,
    path: str = "/responses",
    models: Sequence[ModelConfig] = (),
    clock: Callable[[], float] = time.time,
) -> OpenAIResponsesProvider:
    """An OpenAI Responses provider (``Authorization: Bearer``). ``redactor``
    is the agent's SecretRedactor, applied after the provider's own key
    redaction."""
    return OpenAIResponsesProvider(
        request_policy=request_policy or ResponsesRequestPolicy(),
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
