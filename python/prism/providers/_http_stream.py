"""What the native adapters (Anthropic Messages, OpenAI Responses) share:
credentials and redaction, client ownership, the POST + SSE driver with a
stall timer, and the error plumbing of the OpenAI-compatible adapter.

Two streaming rules hold here as in the OpenAI-compatible adapter:

- the stall timer counts time since the last *data* event, not the last
  byte, so a server that sends only keep-alive comments still times out;
- text is decoded incrementally (httpx's decoder keeps a UTF-8 sequence
  split across network chunks whole until its last byte arrives).
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import anyio
from anyio.lowlevel import checkpoint, checkpoint_if_cancelled, current_token

from prism.contracts import ErrorInfo, JsonValue, ModelConfig, ProviderEvent, ProviderRequest, Usage
from prism.errors import ConfigError, CredentialError, PrismError
from prism.log import log_request, log_response_data, log_response_status
from prism.providers._openai_compatible_errors import http_status_error, transport_error_info
from prism.security.credentials import CredentialSource, as_credential_resolver
from prism.security.redaction import (
    SecretRedactor,
    create_redactor,
    normalize_secrets,
    redactable_credentials,
)

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger("prism.providers")

DEFAULT_STALL_TIMEOUT_S = 60.0
_SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})


class StreamFailed(Exception):
    """Internal: stops the stream with one error event."""

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(info["message"])
        self.info = info


class BodyError(PrismError, ValueError):
    """A request holds something this API cannot carry (nothing is sent)."""

    code = "unsupported_content"


class StreamStalled(Exception):
    """No data event arrived within the stall timeout."""


def fail(message: str, code: str, *, retryable: bool = False, **details: JsonValue) -> StreamFailed:
    info: ErrorInfo = {"message": message, "code": code, "retryable": retryable}
    if details:
        info["details"] = dict(details)
    return StreamFailed(info)


def stall_timeout_of(timeout: Any) -> float:
    """The stall limit: the read timeout a caller configured, else 60 s."""
    if timeout is None:
        return DEFAULT_STALL_TIMEOUT_S
    if isinstance(timeout, int | float):
        return float(timeout)
    read = getattr(timeout, "read", None)
    return float(read) if isinstance(read, int | float) else math.inf


class Decoder:
    """Per-stream state of one adapter: ``feed`` turns one SSE event into
    Prism events, ``finish`` emits the closing ones (or raises StreamFailed)."""

    usage: Usage | None

    def feed(self, event: str, data: str) -> list[ProviderEvent]:
        raise NotImplementedError

    def finish(self) -> list[ProviderEvent]:
        raise NotImplementedError


class HttpStreamProvider:
    """Base of the native adapters. Subclasses set ``url`` and implement
    ``build_body``, ``auth_headers`` and ``decoder``."""

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
        redactor: SecretRedactor | None,
        credential_secrets: Sequence[str],
        models: Sequence[ModelConfig],
        clock: Callable[[], float],
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not name:
            raise ConfigError("provider name must be non-empty")
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
        self._stall_s = stall_timeout_of(timeout)
        self._default_options = dict(default_options or {})
        self._clock = clock
        self._origin = f"provider {name!r}"
        header_secrets = [v for k, v in self._headers.items() if k.lower() in _SECRET_HEADERS]
        keys = redactable_credentials([*credential_secrets, *header_secrets], origin=self._origin)
        self._static_secrets = frozenset(normalize_secrets(keys))
        # The agent's redactor (never a raw secret list) runs after this
        # provider's own one, which knows the keys it sends.
        self._host_redactor = redactor
        self._redactors: dict[frozenset[str], SecretRedactor] = {}
        self._redactor(self._static_secrets)

    # -- subclass hooks -------------------------------------------------------

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
            if len(self._redactors) > 8:
                self._redactors.clear()
            own = create_redactor(secrets)
            redactor = own if self._host_redactor is None else _Chain(own, self._host_redactor)
            self._redactors[secrets] = redactor
        return redactor

    def _http_client(self) -> httpx.AsyncClient:
        import httpx

        from prism.providers.openai_compatible import default_timeout

        loop = current_token()
        if self._owns_client and self._client is not None and self._client_loop is not loop:
            self._client = None  # bound to a loop that is gone (see openai_compatible)
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=default_timeout())
            self._client_loop = loop
        return self._client

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

    async def generate(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        await checkpoint()  # a run cancelled before it starts must not reach the network
        try:
            headers, redactor, body = await self._prepare(request)
        except StreamFailed as refused:
            yield {"type": "error", "error": refused.info}
            return
        from httpx_sse import aconnect_sse

        client = self._http_client()
        extra: dict[str, Any] = {} if self._timeout is None else {"timeout": self._timeout}
        decoder: Decoder | None = None
        log_request(logger, self.name, self.url, headers, body, redactor)
        try:
            async with aconnect_sse(
                client, "POST", self.url, json=body, headers=headers, **extra
            ) as source:
                response = source.response
                content_type = response.headers.get("content-type", "")
                log_response_status(logger, self.name, response.status_code, content_type)
                if response.status_code >= 400:
                    raw = (await response.aread()).decode("utf-8", errors="replace")
                    status = http_status_error(self.name, response, raw, redactor, now=self._clock)
                    yield {"type": "error", "error": self.classify_status(status, raw)}
                    return
                if "text/event-stream" not in content_type:
                    wrong_type = fail(
                        f"{self.name}: expected an event stream, got content-type "
                        f"{content_type.partition(';')[0] or 'none'!r}",
                        "invalid_response",
                    )
                    yield {"type": "error", "error": wrong_type.info}
                    return
                decoder = self.decoder(request, redactor)
                async with aclosing(_data_events(source.response, self._stall_s)) as events:
                    async for kind, data in events:
                        log_response_data(logger, self.name, data, redactor)
                        for event in decoder.feed(kind, data):
                            await checkpoint_if_cancelled()
                            yield event
                for event in decoder.finish():
                    await checkpoint_if_cancelled()
                    yield event
        except StreamFailed as failed:
            yield {"type": "error", "error": _with_usage(failed.info, decoder)}
        except StreamStalled:
            stalled: ErrorInfo = {
                "message": f"{self.name}: stream stalled: no event for {self._stall_s:g} s: "
                f"POST {self.url}",
                "code": "ETIMEDOUT",
                "retryable": True,
                "details": {"kind": "StreamStalled"},
            }
            yield {"type": "error", "error": _with_usage(stalled, decoder)}
        except Exception as exc:  # transport faults; cancellation is a BaseException
            info = transport_error_info(self.name, exc, redactor, method="POST", url=self.url)
            yield {"type": "error", "error": _with_usage(info, decoder)}


class SSEParser:
    """Server-sent events from decoded text, fed chunk by chunk (the
    event-stream format: ``event:``/``data:`` fields, ``:`` comments, a blank
    line ends an event; CRLF, CR and LF line ends). Returns (event, data)
    for each event that carries data."""

    __slots__ = ("_data", "_event", "_partial")

    def __init__(self) -> None:
        self._partial = ""
        self._event = ""
        self._data: list[str] = []

    def feed(self, text: str) -> list[tuple[str, str]]:
        text = self._partial + text
        # A CR at the very end may be the first half of a CRLF: keep it back.
        hold_cr = text.endswith("\r")
        if hold_cr:
            text = text[:-1]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        self._partial = lines.pop() + ("\r" if hold_cr else "")
        out: list[tuple[str, str]] = []
        for line in lines:
            if not line:
                if self._data:
                    out.append((self._event or "message", "\n".join(self._data)))
                self._event, self._data = "", []
            elif line.startswith("data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(" ") else value)
            elif line.startswith("event:"):
                value = line[6:]
                self._event = value[1:] if value.startswith(" ") else value
            # comments (":") and other fields (id, retry) carry nothing we use
        return out


async def _data_events(response: Any, stall_s: float) -> AsyncGenerator[tuple[str, str], None]:
    """(event name, data) of each SSE event that carries data.

    httpx decodes the bytes incrementally (a character split across network
    chunks is held until it is whole). The stall clock restarts only when a
    data event arrives: a chunk that brings none (keep-alive comments) after
    ``stall_s`` ends the stream. Total silence is the read timeout's job."""
    parser = SSEParser()
    last_data = anyio.current_time()
    async for text in response.aiter_text():
        events = parser.feed(text)
        now = anyio.current_time()
        if events:
            last_data = now
            for event in events:
                yield event
        elif now - last_data > stall_s:
            raise StreamStalled


class _Chain:
    """Two redactors in a row: the provider's keys, then the agent's secrets."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: SecretRedactor, second: SecretRedactor) -> None:
        self._first, self._second = first, second

    @property
    def mask(self) -> str:
        return self._first.mask

    def __len__(self) -> int:
        return len(self._first) + len(self._second)

    def contains(self, text: str) -> bool:
        return self._first.contains(text) or self._second.contains(text)

    def redact_text(self, text: str) -> str:
        return self._second.redact_text(self._first.redact_text(text))

    def redact_value(self, value: Any) -> Any:
        return self._second.redact_value(self._first.redact_value(value))


def _with_usage(info: ErrorInfo, decoder: Decoder | None) -> ErrorInfo:
    """Usage the provider already reported (it is billed) is kept on the error."""
    if decoder is None or decoder.usage is None:
        return info
    details: dict[str, Any] = dict(info.get("details") or {})
    details["usage"] = dict(decoder.usage)
    return {**info, "details": details}
