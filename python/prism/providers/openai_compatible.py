"""OpenAI-compatible Chat Completions streaming provider (httpx + httpx-sse).

One adapter serves every API that speaks the Chat Completions wire format
(OpenAI, OpenRouter, Z.ai, Moonshot/Kimi, local servers). Differences between
them are data: a :class:`RequestPolicy`, a :class:`CachePolicy`, headers and
model metadata, which the presets in :mod:`prism.providers.packages` supply.

Failures are yielded as one ``error`` event, never raised; cancellation is
anyio cancellation and closes the HTTP stream (the response lives in an
``async with`` that unwinds on cancel or when the consumer stops iterating).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from anyio.lowlevel import checkpoint, checkpoint_if_cancelled, current_token

from prism.contracts import (
    DoneEvent,
    ErrorInfo,
    JsonValue,
    ModelConfig,
    ProviderEvent,
    ProviderRequest,
    ToolCall,
    Usage,
)
from prism.errors import ConfigError, CredentialError
from prism.log import log_request, log_response_data, log_response_status
from prism.providers._openai_compatible_errors import (
    describe_payload_error,
    http_status_error,
    incomplete_stream_info,
    stalled_stream_info,
    stream_error_info,
    transport_error_info,
)
from prism.providers._openai_compatible_request import (
    CachePolicy,
    RequestPolicy,
    RequestSerializationError,
    build_request_body,
)
from prism.providers._sse import (
    DEFAULT_STALL_TIMEOUT_S,
    StreamStalled,
    TextJoiner,
    check_stall_timeout,
    iter_sse_data,
)
from prism.security.credentials import CredentialSource, as_credential_resolver
from prism.security.limits import too_deep_path
from prism.security.redaction import (
    SecretRedactor,
    create_redactor,
    normalize_secrets,
    redactable_credentials,
)

if TYPE_CHECKING:
    # httpx is imported where a request is made, not by `import prism`:
    # it costs ~90 ms, and most processes (the CLI with the mock) never use it.
    import httpx

logger = logging.getLogger("prism.providers")

__all__ = [
    "CachePolicy",
    "OpenAICompatibleProvider",
    "RequestPolicy",
    "RequestSerializationError",
    "create_openai_compatible_provider",
    "default_timeout",
    "map_usage",
]


def default_timeout() -> httpx.Timeout:
    """The timeouts of a client the provider creates itself."""
    import httpx

    return httpx.Timeout(connect=10.0, read=DEFAULT_READ_TIMEOUT_S, write=30.0, pool=10.0)


DEFAULT_READ_TIMEOUT_S = 60.0
"""Read is per chunk, not per response: long streams are fine, a silent server
is not. 60 s covers a slow first token from a loaded server (reasoning models
included, which stream reasoning deltas meanwhile) while a stall ends the turn
in a minute instead of two; the official SDKs bound a whole request at 600 s
and have no per-chunk limit, so this is the stricter of the two."""

_SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})


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


class _StreamFailed(Exception):
    """Internal: stops the stream with one error event."""

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(info["message"])
        self.info = info


class OpenAICompatibleProvider:
    """An ``AIProvider`` for Chat Completions streaming. Build it with
    :func:`create_openai_compatible_provider`."""

    # Structured output (``run(output_type=...)``) is asked for with the
    # request's ``responseFormat`` option, sent as ``response_format``.
    supports_response_format = True

    def __init__(
        self,
        *,
        base_url: str,
        credential: CredentialSource | None,
        http_client: httpx.AsyncClient | None,
        headers: Mapping[str, str] | None,
        timeout: httpx.Timeout | float | None,
        name: str,
        request_policy: RequestPolicy,
        cache_policy: CachePolicy,
        default_options: Mapping[str, JsonValue] | None,
        secrets: Sequence[str],
        credential_secrets: Sequence[str],
        path: str,
        auth_header: str,
        auth_scheme: str | None,
        models: Sequence[ModelConfig],
        clock: Callable[[], float],
        stall_timeout: float | None = DEFAULT_STALL_TIMEOUT_S,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not name:
            raise ConfigError("provider name must be non-empty")
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/" + path.lstrip("/")
        self.request_policy = request_policy
        self.cache_policy = cache_policy
        self.models: tuple[ModelConfig, ...] = tuple(models)
        self._credential = as_credential_resolver(credential) if credential is not None else None
        self._client = http_client
        self._owns_client = http_client is None
        self._client_loop: object | None = None
        self._headers = dict(headers or {})
        self._timeout = timeout
        self._default_options = dict(default_options or {})
        self._auth_header = auth_header
        self._auth_scheme = auth_scheme
        self._clock = clock
        self._stall_timeout = check_stall_timeout(stall_timeout)
        self._origin = f"provider {name!r}"
        header_secrets = [v for k, v in self._headers.items() if k.lower() in _SECRET_HEADERS]
        # Keys and tokens too short to redact (a local server's "x") are used
        # but not redacted, with a one-time warning; explicit secrets= must
        # be redactable. Built now, so a bad secret fails here, not mid-run.
        keys = redactable_credentials([*credential_secrets, *header_secrets], origin=self._origin)
        self._static_secrets = frozenset(normalize_secrets([*secrets, *keys]))
        self._redactors: dict[frozenset[str], SecretRedactor] = {}
        self._redactor(self._static_secrets)

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(name={self.name!r}, url={self.url!r})"

    def build_body(self, request: ProviderRequest) -> dict[str, Any]:
        """The JSON body ``generate`` would send (raises RequestSerializationError)."""
        return build_request_body(
            request,
            policy=self.request_policy,
            cache=self.cache_policy,
            default_options=self._default_options,
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> OpenAICompatibleProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _redactor(self, secrets: frozenset[str]) -> SecretRedactor:
        redactor = self._redactors.get(secrets)
        if redactor is None:
            # Built once per secret set (token refreshes add a new set).
            if len(self._redactors) > 8:
                self._redactors.clear()
            redactor = create_redactor(secrets)
            self._redactors[secrets] = redactor
        return redactor

    async def _prepare(
        self, request: ProviderRequest
    ) -> tuple[dict[str, str], SecretRedactor, dict[str, Any]]:
        """Headers, redactor and body; raises _StreamFailed (nothing is sent)."""
        secrets = self._static_secrets
        headers = {"Content-Type": "application/json", **self._headers}
        if self._credential is not None:
            try:
                resolved = await self._credential.resolve()
            except CredentialError as exc:
                raise _refusal(f"{self.name}: {exc}", "credential_error") from None
            if resolved is None:
                raise _refusal(
                    f"{self.name}: no credential: tried {self._credential.description}",
                    "credential_error",
                )
            secrets = secrets | frozenset(
                redactable_credentials(resolved.secrets, origin=self._origin)
            )
            token = resolved.value
            headers[self._auth_header] = (
                f"{self._auth_scheme} {token}" if self._auth_scheme else token
            )
        try:
            redactor = self._redactor(secrets)
        except ConfigError as exc:
            raise _refusal(
                f"{self.name}: resolved credential is unusable: {exc}", "credential_error"
            ) from None
        try:
            body = self.build_body(request)
        except RequestSerializationError as exc:
            raise _refusal(f"{self.name}: {redactor.redact_text(str(exc))}", exc.code) from None
        return headers, redactor, body

    async def generate(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        # A run cancelled before it starts must not reach the network.
        await checkpoint()
        try:
            headers, redactor, body = await self._prepare(request)
        except _StreamFailed as refused:
            yield {"type": "error", "error": refused.info}
            return
        import httpx
        from httpx_sse import aconnect_sse

        loop = current_token()
        if self._owns_client and self._client is not None and self._client_loop is not loop:
            # An httpx client is bound to the event loop that first used it: a
            # provider reused under a second anyio.run() gets a fresh one. The
            # old one belonged to a loop that is gone; there is nothing to await.
            self._client = None
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=default_timeout())
            self._client_loop = loop
        state: _StreamState | None = None
        # An explicit timeout wins; otherwise the client's own (a host's
        # configured client keeps its settings, ours has default_timeout()).
        extra: dict[str, Any] = {} if self._timeout is None else {"timeout": self._timeout}
        log_request(logger, self.name, self.url, headers, body, redactor)
        try:
            async with aconnect_sse(
                self._client, "POST", self.url, json=body, headers=headers, **extra
            ) as source:
                response = source.response
                content_type = response.headers.get("content-type", "")
                log_response_status(logger, self.name, response.status_code, content_type)
                if response.status_code >= 400:
                    raw = (await response.aread()).decode("utf-8", errors="replace")
                    yield {
                        "type": "error",
                        "error": http_status_error(
                            self.name, response, raw, redactor, now=self._clock
                        ),
                    }
                    return
                if "text/event-stream" not in content_type:
                    yield _error(
                        f"{self.name}: expected an event stream, got content-type "
                        f"{content_type.partition(';')[0] or 'none'!r}",
                        "invalid_response",
                    )
                    return
                state = _StreamState(self.name)
                async with aclosing(iter_sse_data(source, self._stall_timeout)) as sse_data:
                    async for data in sse_data:
                        if data == "[DONE]":
                            state.saw_done = True
                            break
                        for event in state.feed(data, redactor):
                            # One chunk of buffered bytes can hold many events;
                            # a cancelled consumer must not receive the rest.
                            await checkpoint_if_cancelled()
                            yield event
                closing = state.finish(self.request_policy.require_done)
                for event in closing:
                    await checkpoint_if_cancelled()
                    yield event
        except _StreamFailed as failed:
            yield {"type": "error", "error": _with_usage(failed.info, state)}
        except StreamStalled as stalled:
            info = stalled_stream_info(self.name, stalled.seconds, redactor, url=self.url)
            yield {"type": "error", "error": _with_usage(info, state)}
        except Exception as exc:  # transport faults; cancellation is a BaseException
            info = transport_error_info(self.name, exc, redactor, method="POST", url=self.url)
            yield {"type": "error", "error": _with_usage(info, state)}


class _StreamState:
    """Folds parsed chunks into events; ``finish`` emits the closing events."""

    __slots__ = ("calls", "content", "name", "reasoning", "saw_done", "stop_reason", "usage")

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: dict[int, _CallState] = {}
        self.content = TextJoiner()
        self.reasoning = TextJoiner()
        self.usage: Usage | None = None
        self.stop_reason: str | None = None
        self.saw_done = False

    def feed(self, data: str, redactor: SecretRedactor) -> list[ProviderEvent]:
        log_response_data(logger, self.name, data, redactor)
        chunk = _parse_chunk(self.name, data)
        if chunk.get("error"):
            raise _StreamFailed(stream_error_info(self.name, chunk["error"], redactor))
        raw_usage = chunk.get("usage")
        if isinstance(raw_usage, Mapping):
            self.usage = map_usage(raw_usage)  # cumulative when repeated: last wins
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise _StreamFailed(describe_payload_error(self.name, "choices is not a list"))
        events: list[ProviderEvent] = []
        for choice in choices:
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue  # n > 1 is not part of the Prism contract
            delta = choice.get("delta") or {}
            if not isinstance(delta, Mapping):
                raise _StreamFailed(describe_payload_error(self.name, "delta is not an object"))
            events.extend(_delta_events(self, delta))
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self.stop_reason = finish
        return events

    def finish(self, require_done: bool) -> list[ProviderEvent]:
        # Neither [DONE] nor a finish_reason means the answer was cut off,
        # whatever the policy: require_done=False only waives the [DONE]
        # marker when the model said it finished. With a finish reason but no
        # [DONE] the default policy still says incomplete, since the usage
        # chunk (stream_options.include_usage) follows the finish reason and
        # may be the part that was lost; usage that did arrive rides on the
        # error (see _with_usage), so billing is never undercounted.
        if not self.saw_done and self.stop_reason is None:
            raise _StreamFailed(incomplete_stream_info(self.name, "no finish_reason"))
        if not self.saw_done and require_done:
            raise _StreamFailed(incomplete_stream_info(self.name))
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
        done: DoneEvent = {"type": "done"}
        if self.stop_reason is not None:
            done["stopReason"] = self.stop_reason
        if self.usage is not None:
            events.append({"type": "usage", "usage": self.usage})
            done["usage"] = self.usage
        events.append(done)
        return events


def _with_usage(info: ErrorInfo, state: _StreamState | None) -> ErrorInfo:
    """Usage the provider already reported (it is billed) is kept on the error."""
    if state is None or state.usage is None:
        return info
    details: dict[str, Any] = dict(info.get("details") or {})
    details["usage"] = dict(state.usage)
    return {**info, "details": details}


def _error(message: str, code: str) -> ProviderEvent:
    # Explicitly not retryable: the same request would fail the same way.
    return {"type": "error", "error": {"message": message, "code": code, "retryable": False}}


def _refusal(message: str, code: str) -> _StreamFailed:
    """A request refused before it is sent (see ``_error``)."""
    return _StreamFailed({"message": message, "code": code, "retryable": False})


def _parse_chunk(provider: str, data: str) -> Mapping[str, Any]:
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        # The position, not the payload: chunks may quote user content.
        raise _StreamFailed(
            describe_payload_error(
                provider,
                f"malformed stream chunk (invalid JSON at char {getattr(exc, 'pos', '?')})",
            )
        ) from None
    if not isinstance(chunk, Mapping):
        raise _StreamFailed(describe_payload_error(provider, "stream chunk is not a JSON object"))
    return chunk


def _delta_events(stream: _StreamState, delta: Mapping[str, Any]) -> list[ProviderEvent]:
    provider, calls = stream.name, stream.calls
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
        raise _StreamFailed(describe_payload_error(provider, "tool_calls is not a list"))
    for position, fragment in enumerate(tool_calls):
        if not isinstance(fragment, Mapping):
            raise _StreamFailed(
                describe_payload_error(provider, "tool call fragment is not an object")
            )
        index = fragment.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise _StreamFailed(describe_payload_error(provider, "tool call index is not a number"))
        state = calls.setdefault(index, _CallState())
        event: dict[str, Any] = {"type": "tool_call_delta", "index": index}
        call_id = fragment.get("id")
        if isinstance(call_id, str) and call_id and state.id != call_id:
            state.id = call_id
            event["id"] = call_id
        fn = fragment.get("function") or {}
        if not isinstance(fn, Mapping):
            raise _StreamFailed(
                describe_payload_error(provider, "tool call function is not an object")
            )
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
        if len(event) > 2:
            events.append(event)  # type: ignore[arg-type]
    return events


def _finish_call(provider: str, index: int, state: _CallState) -> ToolCall | None:
    if not state.name:
        raise _StreamFailed(
            {
                "message": f"{provider}: streamed tool call #{index} has no function name",
                "code": "invalid_tool_call",
                "retryable": False,
            }
        )
    call_id = state.id or f"call_{uuid.uuid4().hex[:24]}"
    arguments = _object_arguments(state.arguments + state.argument_text.flush())
    if arguments is None:
        # Not a run failure: the call stays as the deltas already emitted
        # (raw argument text included), and the runtime answers it with an
        # ``invalid_arguments`` tool error so the model can correct itself.
        return None
    return {"id": call_id, "name": state.name, "arguments": arguments}


def _object_arguments(raw: str) -> dict[str, Any] | None:
    """The arguments as a JSON object within the nesting limit, else None."""
    text = raw.strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or too_deep_path(value) is not None:
        return None
    return value


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
    secrets: Sequence[str] = (),
    credential_secrets: Sequence[str] = (),
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
    (local servers). ``secrets`` adds more strings to redact from errors (each
    at least ``MIN_SECRET_LENGTH`` characters); ``credential_secrets`` are key
    values known up front (a preset's), treated like ``api_key``: one shorter
    than that is used but not redacted, with a one-time warning.
    ``http_client`` is used as-is and never closed by the provider; without
    one, the provider owns a client that :meth:`~OpenAICompatibleProvider.aclose`
    closes. ``stall_timeout`` (seconds, ``None`` for none) ends a stream that
    sends no data event for that long, keep-alive comments or not.
    """
    if api_key is not None and credential is not None:
        raise ConfigError("pass api_key or credential, not both")
    if api_key is not None and (not isinstance(api_key, str) or not api_key):
        raise ConfigError("api_key must be a non-empty string")
    if http_client is not None and not _is_async_client(http_client):
        raise ConfigError("http_client must be an httpx.AsyncClient")
    source: CredentialSource | None = api_key if api_key is not None else credential
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
        # A known key is redacted from the start (and validated now).
        secrets=secrets,
        credential_secrets=(*credential_secrets, *((api_key,) if api_key is not None else ())),
        path=path,
        auth_header=auth_header,
        auth_scheme=auth_scheme,
        models=models,
        clock=clock,
        stall_timeout=stall_timeout,
    )


def _is_async_client(value: object) -> bool:
    import httpx

    return isinstance(value, httpx.AsyncClient)
