"""The request, stream and error plumbing every HTTP provider adapter shares
(Chat Completions, Anthropic Messages, OpenAI Responses): credentials and
redaction, client ownership, the POST that opens an SSE stream, and the one
way each failure becomes an ``error`` event.

An adapter supplies only what differs: the body (``build_body``), its auth
header (``auth_headers``), a :class:`Decoder` that turns the API's events
into Prism events, and vendor codes for HTTP errors (``classify_status``).
The SSE layer itself (stall timer, UTF-8 at chunk edges) is
:mod:`prism.providers._sse`.

Failures are yielded as one ``error`` event, never raised; cancellation is
anyio cancellation and closes the HTTP stream (the response lives in an
``async with`` that unwinds on cancel or when the consumer stops iterating).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar

from anyio.lowlevel import checkpoint, checkpoint_if_cancelled, current_token

from prism._json_fields import read_json_fields
from prism.contracts import (
    DoneEvent,
    ErrorInfo,
    JsonValue,
    ModelConfig,
    ProviderEvent,
    ProviderRequest,
    Usage,
)
from prism.errors import ConfigError, CredentialError, PrismError
from prism.log import log_request, log_response_data, log_response_status
from prism.providers._openai_compatible_errors import (
    MAX_BODY_CHARS,
    PROVIDER_CODE_CHARS,
    TRANSIENT_STATUSES,
    http_status_error,
    stalled_stream_info,
    transport_error_info,
)
from prism.providers._sse import DEFAULT_STALL_TIMEOUT_S, StreamStalled, iter_sse_data
from prism.security.credentials import CredentialSource, as_credential_resolver
from prism.security.limits import too_deep_path
from prism.security.redaction import (
    SecretRedactor,
    normalize_secrets,
    redact_then_clip,
    redactable_credentials,
    require_redactor,
    with_secrets,
)

if TYPE_CHECKING:
    # httpx is imported where a request is made, not by `import prism`:
    # it costs ~90 ms, and most processes (the CLI with the mock) never use it.
    import httpx

logger = logging.getLogger("prism.providers")

DEFAULT_READ_TIMEOUT_S = 60.0
"""Read is per chunk, not per response: long streams are fine, a silent server
is not. 60 s covers a slow first token from a loaded server (reasoning models
included, which stream reasoning deltas meanwhile) while a stall ends the turn
in a minute instead of two; the official SDKs bound a whole request at 600 s
and have no per-chunk limit, so this is the stricter of the two."""

_SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})


def default_timeout() -> httpx.Timeout:
    """The timeouts of a client the provider creates itself."""
    import httpx

    return httpx.Timeout(connect=10.0, read=DEFAULT_READ_TIMEOUT_S, write=30.0, pool=10.0)


class StreamFailed(Exception):
    """Internal: stops the stream with one error event."""

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(info["message"])
        self.info = info


class RequestSerializationError(PrismError, ValueError):
    """A request holds something this API cannot carry (nothing is sent).
    One class for every adapter, so a host catches one thing."""

    code = "unsupported_content"


BodyError = RequestSerializationError


def request_options(
    request: ProviderRequest, default_options: Mapping[str, JsonValue] | None
) -> dict[str, JsonValue]:
    """The request's options over the model's over the provider's defaults."""
    options: dict[str, JsonValue] = {**(default_options or {})}
    options.update(request["model"].get("options") or {})
    options.update(request.get("options") or {})
    return options


def copy_options(
    body: dict[str, Any], options: Mapping[str, JsonValue], fields: Mapping[str, str]
) -> None:
    """Each option of ``fields`` (Prism name -> wire name) that is set."""
    for key, target in fields.items():
        if options.get(key) is not None:
            body[target] = options[key]


def max_tokens_option(options: Mapping[str, JsonValue], default: int | None = None) -> int | None:
    """``maxOutputTokens`` (or ``maxTokens``), checked; ``default`` when unset."""
    value = options.get("maxOutputTokens", options.get("maxTokens", default))
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise BodyError("options.maxTokens must be a positive integer")
    return value


def tool_choice_option(options: Mapping[str, JsonValue]) -> tuple[str, str] | None:
    """``toolChoice`` checked, as ``(mode, tool name)``: mode ``"auto"``,
    ``"none"`` or ``"required"`` with an empty name, or ``"tool"`` with the
    one tool's name; None when unset. The caller writes its API's wire form."""
    choice = options.get("toolChoice")
    if choice is None:
        return None
    if choice in ("auto", "none", "required"):
        return str(choice), ""
    if isinstance(choice, Mapping) and isinstance(choice.get("name"), str):
        return "tool", str(choice["name"])
    raise BodyError("options.toolChoice must be 'auto', 'none', 'required' or {name: ...}")


def json_schema_option(options: Mapping[str, JsonValue]) -> tuple[str, Any] | None:
    """``responseFormat`` checked, as ``("json_object", None)`` or
    ``("json_schema", (name, schema))``; None when unset."""
    value = options.get("responseFormat")
    if value is None:
        return None
    if isinstance(value, Mapping) and value.get("type") == "json_object":
        return "json_object", None
    if (
        isinstance(value, Mapping)
        and value.get("type") == "json_schema"
        and isinstance(value.get("name"), str)
        and isinstance(value.get("schema"), Mapping)
    ):
        return "json_schema", (value["name"], value["schema"])
    raise BodyError(
        "options.responseFormat must be {type: 'json_schema', name, schema} or "
        "{type: 'json_object'}"
    )


def cache_key_option(request: ProviderRequest, options: Mapping[str, JsonValue]) -> str | None:
    """The prompt-cache key: ``options.cacheKey``, else the session id."""
    key = options.get("cacheKey") or (request.get("metadata") or {}).get("sessionId")
    return key if isinstance(key, str) and key else None


def finish_body(
    body: dict[str, Any], policy_extra: Mapping[str, Any], options: Mapping[str, JsonValue]
) -> dict[str, Any]:
    """The policy's vendor fields, then the request's ``extraBody``, last."""
    body.update(policy_extra)
    extra = options.get("extraBody")
    if extra is not None:
        if not isinstance(extra, Mapping):
            raise BodyError("options.extraBody must be an object")
        body.update(extra)
    return body


def request_model(request: ProviderRequest) -> Mapping[str, Any]:
    """The request's model config, checked to name a model (every body starts
    with it)."""
    model = request.get("model")
    if not isinstance(model, Mapping) or not isinstance(model.get("model"), str):
        raise BodyError("request.model.model must be a model name string")
    return model


def tool_call_id_and_name(block: Mapping[str, Any], index: int) -> tuple[str, str]:
    """A history tool call's id and name (``messages[index]``), which every
    API needs to pair the call with its result."""
    call_id, name = block.get("id"), block.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise BodyError(f"tool_call block in messages[{index}] needs id and name")
    return call_id, name


def declared_tool_name(tool: Mapping[str, Any]) -> str:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise BodyError("tool declaration without a name")
    return name


def fail(message: str, code: str, *, retryable: bool = False, **details: JsonValue) -> StreamFailed:
    """A StreamFailed; not retryable unless said (the same request fails alike)."""
    info: ErrorInfo = {"message": message, "code": code, "retryable": retryable}
    if details:
        info["details"] = dict(details)
    return StreamFailed(info)


def malformed(provider: str, reason: str) -> StreamFailed:
    """A stream event that cannot be read: retryable, since a server glitch
    is the likely cause and nothing of the answer was kept."""
    return fail(f"{provider}: {reason}", "malformed_chunk", retryable=True)


def parse_event(provider: str, data: str, what: str = "stream event") -> dict[str, Any]:
    """``data`` as a JSON object, else a ``malformed_chunk`` failure that
    names the character position (never the payload: it may quote user text)."""
    try:
        payload = json.loads(data)
    except ValueError as exc:
        position = getattr(exc, "pos", "?")
        raise malformed(provider, f"malformed {what} (invalid JSON at char {position})") from None
    if not isinstance(payload, dict):
        raise malformed(provider, f"{what} is not a JSON object")
    return payload


def stream_error(
    provider: str,
    code: str,
    message: str,
    status: int | None,
    redactor: SecretRedactor,
    *,
    otherwise: str = "provider_stream_error",
) -> StreamFailed:
    """An error event inside the stream: classified by the HTTP ``status`` its
    vendor ``code`` stands for (retryable when transient), else ``otherwise``;
    text redacted, then clipped; the vendor code kept as ``details.providerCode``."""
    text = redact_then_clip(
        f"{provider}: stream error: {code}: {message}", redactor, MAX_BODY_CHARS
    )
    transient = status is not None and status in TRANSIENT_STATUSES
    failed = fail(text, str(status) if status is not None else otherwise, retryable=transient)
    failed.info["details"] = {"providerCode": redact_then_clip(code, redactor, PROVIDER_CODE_CHARS)}
    if status is not None:
        failed.info["status"] = status
    return failed


def object_arguments(raw: object) -> dict[str, Any] | None:
    """Streamed tool-call arguments as a JSON object within the nesting limit,
    else None (the call then stays as its deltas and the runtime answers it
    with an ``invalid_arguments`` tool result so the model can correct itself)."""
    if not isinstance(raw, str):
        return None
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


def stall_timeout_of(timeout: Any) -> float | None:
    """The stall limit of an adapter without its own setting: the read timeout
    a caller configured (None when reads never time out), else 60 s."""
    if timeout is None:
        return DEFAULT_STALL_TIMEOUT_S
    read = timeout if isinstance(timeout, int | float) else getattr(timeout, "read", None)
    if isinstance(read, int | float) and math.isfinite(read) and read > 0:
        return float(read)
    return None


def credential_source(api_key: str | None, credential: CredentialSource | None) -> Any:
    """The one credential of a factory's ``api_key`` / ``credential`` pair."""
    if api_key is not None and credential is not None:
        raise ConfigError("pass api_key or credential, not both")
    if api_key is not None and (not isinstance(api_key, str) or not api_key):
        raise ConfigError("api_key must be a non-empty string")
    return api_key if api_key is not None else credential


class Decoder:
    """Per-stream state of one adapter: ``feed`` turns one SSE event into
    Prism events (or raises StreamFailed), ``finish`` emits the closing ones.
    ``ended`` set by ``feed`` stops reading (a terminal marker such as
    ``[DONE]``); ``usage`` is what the server reported so far (it rides on
    any later error: billed tokens are never lost)."""

    usage: Usage | None = None
    ended: bool = False

    def feed(self, event: str, data: str) -> list[ProviderEvent]:
        raise NotImplementedError

    def finish(self) -> list[ProviderEvent]:
        raise NotImplementedError


_Policy = TypeVar("_Policy")


def policy_from_json(cls: type[_Policy], data: Mapping[str, Any]) -> _Policy:
    """A request policy dataclass from its camelCase JSON form (each field's
    key is its name in camelCase, see ``prism._json_fields``)."""
    found = read_json_fields(cls, data, snake_case=False)
    if found.unknown:
        raise ConfigError(f"unknown request policy keys: {', '.join(sorted(found.unknown))}")
    return cls(**found.values)


def closing_events(name: str, stop_reason: str | None, usage: Usage | None) -> list[ProviderEvent]:
    """How every adapter ends a stream that finished: the usage the server
    reported (if any), then ``done`` with the stop reason and that usage."""
    done: DoneEvent = {"type": "done"}
    if stop_reason is not None:
        done["stopReason"] = stop_reason
    if usage is None:
        logger.debug("%s: stream reported no usage", name)
        return [done]
    done["usage"] = usage
    return [{"type": "usage", "usage": usage}, done]


def with_usage(info: ErrorInfo, decoder: Decoder | None) -> ErrorInfo:
    """Usage the provider already reported (it is billed) is kept on the error."""
    if decoder is None or decoder.usage is None:
        return info
    details: dict[str, Any] = dict(info.get("details") or {})
    details["usage"] = dict(decoder.usage)
    return {**info, "details": details}


class HttpStreamProvider:
    """Base of the HTTP adapters. Subclasses implement ``build_body`` and
    ``decoder`` and may override ``auth_headers`` and ``classify_status``."""

    supports_response_format = True

    def __init__(
        self,
        *,
        base_url: str,
        path: str,
        credential: CredentialSource | None,
        http_client: httpx.AsyncClient | None,
        headers: Mapping[str, str] | None,
        timeout: httpx.Timeout | float | None,
        name: str,
        default_options: Mapping[str, JsonValue] | None,
        redactor: SecretRedactor,
        credential_secrets: Sequence[str],
        models: Sequence[ModelConfig],
        clock: Callable[[], float],
        stall_timeout: float | None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not name:
            raise ConfigError("provider name must be non-empty")
        require_redactor(redactor, owner=f"provider {name!r}")
        if http_client is not None and not _is_async_client(http_client):
            raise ConfigError("http_client must be an httpx.AsyncClient")
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/" + path.lstrip("/")
        self.models: tuple[ModelConfig, ...] = tuple(models)
        self._credential = as_credential_resolver(credential) if credential is not None else None
        self._client = http_client
        self._owns_client = http_client is None
        self._client_loop: object | None = None
        self._headers = dict(headers or {})
        self._timeout = timeout
        self._stall_timeout = stall_timeout
        self._default_options = dict(default_options or {})
        self._clock = clock
        self._origin = f"provider {name!r}"
        header_secrets = [v for k, v in self._headers.items() if k.lower() in _SECRET_HEADERS]
        # The keys this provider sends (known up front, or resolved per
        # request below); one too short to redact (a local server's "x") is
        # used but not redacted, with a one-time warning.
        keys = redactable_credentials([*credential_secrets, *header_secrets], origin=self._origin)
        self._static_secrets = frozenset(normalize_secrets(keys))
        # The agent's redactor (its secrets=) runs first, then one for the
        # keys this provider sends, which the agent may never have seen.
        self._host_redactor = redactor
        self._redactors: dict[frozenset[str], SecretRedactor] = {}
        self._redactor(self._static_secrets)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, url={self.url!r})"

    # -- what an adapter supplies ---------------------------------------------

    def build_body(self, request: ProviderRequest) -> dict[str, Any]:
        raise NotImplementedError

    def auth_headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def decoder(self, request: ProviderRequest, redactor: SecretRedactor) -> Decoder:
        raise NotImplementedError

    def classify_status(self, info: ErrorInfo, body: str) -> ErrorInfo:
        """Adjust an HTTP error's info (vendor-specific codes)."""
        return info

    # -- lifecycle ------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _redactor(self, secrets: frozenset[str]) -> SecretRedactor:
        redactor = self._redactors.get(secrets)
        if redactor is None:
            # Built once per secret set (token refreshes add a new set).
            if len(self._redactors) > 8:
                self._redactors.clear()
            redactor = with_secrets(self._host_redactor, secrets)
            self._redactors[secrets] = redactor
        return redactor

    def _http_client(self) -> httpx.AsyncClient:
        import httpx

        loop = current_token()
        if self._owns_client and self._client is not None and self._client_loop is not loop:
            # An httpx client is bound to the event loop that first used it: a
            # provider reused under a second anyio.run() gets a fresh one. The
            # old one belonged to a loop that is gone; there is nothing to await.
            self._client = None
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=default_timeout())
            self._client_loop = loop
        return self._client

    # -- one request ------------------------------------------------------------

    async def _prepare(
        self, request: ProviderRequest
    ) -> tuple[dict[str, str], SecretRedactor, dict[str, Any]]:
        """Headers, redactor and body; raises StreamFailed (nothing sent)."""
        secrets = self._static_secrets
        headers = {"Content-Type": "application/json", **self._headers}
        if self._credential is not None:
            try:
                resolved = await self._credential.resolve()
            except CredentialError as exc:
                raise fail(f"{self.name}: {exc}", "credential_error") from None
            if resolved is None:
                raise fail(
                    f"{self.name}: no credential: tried {self._credential.description}",
                    "credential_error",
                )
            secrets = secrets | frozenset(
                redactable_credentials(resolved.secrets, origin=self._origin)
            )
            headers.update(self.auth_headers(resolved.value))
        try:
            redactor = self._redactor(secrets)
        except ConfigError as exc:
            raise fail(
                f"{self.name}: resolved credential is unusable: {exc}", "credential_error"
            ) from None
        try:
            body = self.build_body(request)
        except BodyError as exc:
            raise fail(f"{self.name}: {redactor.redact_text(str(exc))}", exc.code) from None
        return headers, redactor, body

    async def _check_response(self, response: httpx.Response, redactor: SecretRedactor) -> None:
        """Raises StreamFailed unless ``response`` is a successful event stream."""
        if response.status_code >= 400:
            raw = (await response.aread()).decode("utf-8", errors="replace")
            status = http_status_error(self.name, response, raw, redactor, now=self._clock)
            raise StreamFailed(self.classify_status(status, raw))
        content_type = response.headers.get("content-type", "")
        if "text/event-stream" not in content_type:
            raise fail(
                f"{self.name}: expected an event stream, got content-type "
                f"{content_type.partition(';')[0] or 'none'!r}",
                "invalid_response",
            )

    async def generate(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        await checkpoint()  # a run cancelled before it starts must not reach the network
        try:
            headers, redactor, body = await self._prepare(request)
        except StreamFailed as refused:
            yield {"type": "error", "error": refused.info}
            return
        from httpx_sse import aconnect_sse

        # An explicit timeout wins; otherwise the client's own (a host's
        # configured client keeps its settings, ours has default_timeout()).
        extra: dict[str, Any] = {} if self._timeout is None else {"timeout": self._timeout}
        decoder: Decoder | None = None
        log_request(logger, self.name, self.url, headers, body, redactor)
        try:
            async with aconnect_sse(
                self._http_client(), "POST", self.url, json=body, headers=headers, **extra
            ) as source:
                response = source.response
                log_response_status(
                    logger,
                    self.name,
                    response.status_code,
                    response.headers.get("content-type", ""),
                )
                await self._check_response(source.response, redactor)
                decoder = self.decoder(request, redactor)
                async with aclosing(iter_sse_data(source, self._stall_timeout)) as events:
                    async for kind, data in events:
                        log_response_data(logger, self.name, data, redactor)
                        for event in decoder.feed(kind, data):
                            # One chunk of buffered bytes can hold many events;
                            # a cancelled consumer must not receive the rest.
                            await checkpoint_if_cancelled()
                            yield event
                        if decoder.ended:
                            break
                for event in decoder.finish():
                    await checkpoint_if_cancelled()
                    yield event
        except StreamFailed as failed:
            yield {"type": "error", "error": with_usage(failed.info, decoder)}
        except StreamStalled as stalled:
            info = stalled_stream_info(self.name, stalled.seconds, redactor, url=self.url)
            yield {"type": "error", "error": with_usage(info, decoder)}
        except Exception as exc:  # transport faults; cancellation is a BaseException
            info = transport_error_info(self.name, exc, redactor, method="POST", url=self.url)
            yield {"type": "error", "error": with_usage(info, decoder)}


def _is_async_client(value: object) -> bool:
    import httpx

    return isinstance(value, httpx.AsyncClient)
