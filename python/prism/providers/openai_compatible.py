"""OpenAI-compatible Chat Completions streaming provider (httpx + httpx-sse).

One adapter serves every API that speaks the Chat Completions wire format
(OpenAI, OpenRouter, Z.ai, Moonshot/Kimi, local servers). Differences between
them are data: a :class:`RequestPolicy`, a :class:`CachePolicy`, headers and
model metadata, which the presets in :mod:`prism.providers.packages` supply.

Failures and cancellation work as for every HTTP adapter (see
:mod:`prism.providers._http_stream`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prism.contracts import (
    JsonValue,
    ModelConfig,
    ProviderEvent,
    ProviderRequest,
    ToolCall,
    Usage,
)
from prism.providers._http_stream import (
    Decoder,
    HttpStreamProvider,
    RequestSerializationError,
    StreamFailed,
    closing_events,
    credential_source,
    default_timeout,
    fail,
    malformed,
    object_arguments,
    parse_event,
)
from prism.providers._openai_compatible_errors import incomplete_stream_info, stream_error_info
from prism.providers._openai_compatible_request import (
    CachePolicy,
    RequestPolicy,
    build_request_body,
)
from prism.providers._sse import DEFAULT_STALL_TIMEOUT_S, TextJoiner, check_stall_timeout
from prism.security.credentials import CredentialSource
from prism.security.redaction import SecretRedactor

if TYPE_CHECKING:
    import httpx

__all__ = [
    "CachePolicy",
    "OpenAICompatibleProvider",
    "RequestPolicy",
    "RequestSerializationError",
    "create_openai_compatible_provider",
    "default_timeout",
    "map_usage",
]


def map_usage(raw: Mapping[str, Any]) -> Usage:
    """Chat Completions usage -> Prism ``Usage``.

    ``inputTokens`` is the whole prompt as the API counts it; ``cacheReadTokens``
    / ``cacheWriteTokens`` say how much of it came from / went to the cache.
    ``outputTokens`` already includes ``reasoningTokens``. Breakdowns are never
    added on top, so every token is counted once.
    """

    def count(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return 0
        return max(0, int(value))

    prompt = count(raw.get("prompt_tokens"))
    completion = count(raw.get("completion_tokens"))
    prompt_details = raw.get("prompt_tokens_details")
    prompt_details = prompt_details if isinstance(prompt_details, Mapping) else {}
    completion_details = raw.get("completion_tokens_details")
    completion_details = completion_details if isinstance(completion_details, Mapping) else {}
    # Moonshot reports cached tokens at the top level instead of in the details.
    cached = count(prompt_details.get("cached_tokens")) or count(raw.get("cached_tokens"))
    cache_write = count(prompt_details.get("cache_write_tokens"))
    reasoning = count(completion_details.get("reasoning_tokens"))
    usage: Usage = {
        "inputTokens": prompt,
        "outputTokens": completion,
        "totalTokens": count(raw.get("total_tokens")) or prompt + completion,
    }
    if cached:
        usage["cacheReadTokens"] = cached
    if cache_write:
        usage["cacheWriteTokens"] = cache_write
    if reasoning:
        usage["reasoningTokens"] = reasoning
    return usage


@dataclass(slots=True)
class _CallState:
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    argument_text: TextJoiner = field(default_factory=TextJoiner)


class OpenAICompatibleProvider(HttpStreamProvider):
    """An ``AIProvider`` for Chat Completions streaming. Build it with
    :func:`create_openai_compatible_provider`."""

    # Structured output (``run(output_type=...)``) is asked for with the
    # request's ``responseFormat`` option, sent as ``response_format``.
    supports_response_format = True

    def __init__(
        self,
        *,
        request_policy: RequestPolicy,
        cache_policy: CachePolicy,
        auth_header: str,
        auth_scheme: str | None,
        stall_timeout: float | None = DEFAULT_STALL_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(stall_timeout=check_stall_timeout(stall_timeout), **kwargs)
        self.request_policy = request_policy
        self.cache_policy = cache_policy
        self._auth_header = auth_header
        self._auth_scheme = auth_scheme

    def build_body(self, request: ProviderRequest) -> dict[str, Any]:
        """The JSON body ``generate`` would send (raises RequestSerializationError)."""
        return build_request_body(
            request,
            policy=self.request_policy,
            cache=self.cache_policy,
            default_options=self._default_options,
        )

    def auth_headers(self, token: str) -> dict[str, str]:
        return {self._auth_header: f"{self._auth_scheme} {token}" if self._auth_scheme else token}

    def decoder(self, request: ProviderRequest, redactor: SecretRedactor) -> Decoder:
        return _StreamState(self.name, redactor, self.request_policy.require_done)


class _StreamState(Decoder):
    """Folds parsed chunks into events; ``finish`` emits the closing events."""

    def __init__(self, name: str, redactor: SecretRedactor, require_done: bool) -> None:
        self.name = name
        self.redactor = redactor
        self.require_done = require_done
        self.calls: dict[int, _CallState] = {}
        self.content = TextJoiner()
        self.reasoning = TextJoiner()
        self.usage: Usage | None = None
        self.stop_reason: str | None = None

    def feed(self, event: str, data: str) -> list[ProviderEvent]:
        if data == "[DONE]":
            self.ended = True
            return []
        chunk = parse_event(self.name, data, "stream chunk")
        if chunk.get("error"):
            raise StreamFailed(stream_error_info(self.name, chunk["error"], self.redactor))
        raw_usage = chunk.get("usage")
        if isinstance(raw_usage, Mapping):
            self.usage = map_usage(raw_usage)  # cumulative when repeated: last wins
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise malformed(self.name, "choices is not a list")
        events: list[ProviderEvent] = []
        for choice in choices:
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue  # n > 1 is not part of the Prism contract
            delta = choice.get("delta") or {}
            if not isinstance(delta, Mapping):
                raise malformed(self.name, "delta is not an object")
            events.extend(_delta_events(self, delta))
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self.stop_reason = finish
        return events

    def finish(self) -> list[ProviderEvent]:
        # Neither [DONE] nor a finish_reason means the answer was cut off,
        # whatever the policy: require_done=False only waives the [DONE]
        # marker when the model said it finished. With a finish reason but no
        # [DONE] the default policy still says incomplete, since the usage
        # chunk (stream_options.include_usage) follows the finish reason and
        # may be the part that was lost; usage that did arrive rides on the
        # error (see with_usage), so billing is never undercounted.
        if not self.ended and self.stop_reason is None:
            raise StreamFailed(incomplete_stream_info(self.name, "no finish_reason"))
        if not self.ended and self.require_done:
            raise StreamFailed(incomplete_stream_info(self.name))
        # Half a surrogate pair the server never completed.
        events: list[ProviderEvent] = []
        reasoning, content = self.reasoning.flush(), self.content.flush()
        if reasoning:
            events.append({"type": "thinking_delta", "text": reasoning})
        if content:
            events.append({"type": "content_delta", "text": content})
        for index in sorted(self.calls):
            call = _finish_call(self.name, index, self.calls[index])
            if call is not None:
                events.append({"type": "tool_call", "toolCall": call})
        return [*events, *closing_events(self.name, self.stop_reason, self.usage)]


def _delta_events(stream: _StreamState, delta: Mapping[str, Any]) -> list[ProviderEvent]:
    events: list[ProviderEvent] = []
    reasoning = delta.get("reasoning_content")
    if reasoning is None:
        reasoning = delta.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        reasoning = stream.reasoning.feed(reasoning)
        if reasoning:
            events.append({"type": "thinking_delta", "text": reasoning})
    content = delta.get("content")
    if isinstance(content, str) and content:
        content = stream.content.feed(content)
        if content:
            events.append({"type": "content_delta", "text": content})
    tool_calls = delta.get("tool_calls")
    if tool_calls is None:
        return events
    if not isinstance(tool_calls, list):
        raise malformed(stream.name, "tool_calls is not a list")
    for position, fragment in enumerate(tool_calls):
        event = _call_fragment(stream, position, fragment)
        if len(event) > 2:
            events.append(event)  # type: ignore[arg-type]
    return events


def _call_fragment(stream: _StreamState, position: int, fragment: object) -> dict[str, Any]:
    """Folds one streamed tool-call fragment into its call's state; returns
    the ``tool_call_delta`` it makes (only type and index when it adds nothing)."""
    provider = stream.name
    if not isinstance(fragment, Mapping):
        raise malformed(provider, "tool call fragment is not an object")
    index = fragment.get("index", position)
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise malformed(provider, "tool call index is not a number")
    state = stream.calls.setdefault(index, _CallState())
    event: dict[str, Any] = {"type": "tool_call_delta", "index": index}
    call_id = fragment.get("id")
    if isinstance(call_id, str) and call_id and state.id != call_id:
        state.id = call_id
        event["id"] = call_id
    fn = fragment.get("function") or {}
    if not isinstance(fn, Mapping):
        raise malformed(provider, "tool call function is not an object")
    name = fn.get("name")
    if isinstance(name, str) and name:
        # Most servers send the name once; a few repeat it or split it.
        if state.name is None:
            state.name = name
        elif name != state.name:
            state.name += name
        event["name"] = name
    args = fn.get("arguments")
    if isinstance(args, str) and args:
        args = state.argument_text.feed(args)
    if isinstance(args, str) and args:
        state.arguments += args
        event["argumentsDelta"] = args
    return event


def _finish_call(provider: str, index: int, state: _CallState) -> ToolCall | None:
    if not state.name:
        raise fail(
            f"{provider}: streamed tool call #{index} has no function name", "invalid_tool_call"
        )
    call_id = state.id or f"call_{uuid.uuid4().hex[:24]}"
    arguments = object_arguments(state.arguments + state.argument_text.flush())
    if arguments is None:
        # Not a run failure: the call stays as the deltas already emitted
        # (raw argument text included), and the runtime answers it with an
        # ``invalid_arguments`` tool error so the model can correct itself.
        return None
    return {"id": call_id, "name": state.name, "arguments": arguments}


def create_openai_compatible_provider(
    *,
    base_url: str,
    api_key: str | None = None,
    credential: CredentialSource | None = None,
    http_client: httpx.AsyncClient | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: httpx.Timeout | float | None = None,
    name: str = "openai-compatible",
    request_policy: RequestPolicy | None = None,
    cache_policy: CachePolicy | None = None,
    default_options: Mapping[str, JsonValue] | None = None,
    redactor: SecretRedactor,
    path: str = "/chat/completions",
    auth_header: str = "Authorization",
    auth_scheme: str | None = "Bearer",
    models: Sequence[ModelConfig] = (),
    clock: Callable[[], float] = time.time,
    stall_timeout: float | None = DEFAULT_STALL_TIMEOUT_S,
) -> OpenAICompatibleProvider:
    """Create a Chat Completions streaming provider.

    Give either ``api_key`` (a value the host already holds) or ``credential``
    (a resolver or chain from :mod:`prism.security.credentials`, resolved on
    every request so OAuth tokens stay fresh); neither means no auth header
    (local servers). ``redactor`` is the agent's
    :class:`~prism.security.redaction.SecretRedactor` (required; pass
    ``NOOP_REDACTOR`` when the provider's own keys are all there is to hide):
    error texts go through it and then through the provider's own masking of
    the keys it sends. A key shorter than ``MIN_SECRET_LENGTH`` is used but
    not redacted, with a one-time warning.
    ``http_client`` is used as-is and never closed by the provider; without
    one, the provider owns a client that :meth:`~OpenAICompatibleProvider.aclose`
    closes. ``stall_timeout`` (seconds, ``None`` for none) ends a stream that
    sends no data event for that long, keep-alive comments or not.
    """
    source = credential_source(api_key, credential)
    return OpenAICompatibleProvider(
        base_url=base_url,
        credential=source,
        http_client=http_client,
        headers=headers,
        timeout=timeout,
        name=name,
        request_policy=request_policy or RequestPolicy(),
        cache_policy=cache_policy or CachePolicy(),
        default_options=default_options,
        redactor=redactor,
        # A known key is redacted from the start (and validated now).
        credential_secrets=(api_key,) if api_key is not None else (),
        path=path,
        auth_header=auth_header,
        auth_scheme=auth_scheme,
        models=models,
        clock=clock,
        stall_timeout=stall_timeout,
    )
