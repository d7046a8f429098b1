"""Failure side of the OpenAI-compatible adapter: wire failures -> ErrorInfo.

Codes are the safe, generic ones the retry policy classifies (``"429"``,
``"503"``, ``"ETIMEDOUT"``, ``"ECONNRESET"``, ...); bodies and messages are
redacted, then truncated (never the other way round), before they leave the
adapter.
"""

from __future__ import annotations

import errno
import json
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from prism.contracts import ErrorInfo
from prism.security.redaction import SecretRedactor, redact_then_clip

if TYPE_CHECKING:  # imported on use: see openai_compatible.py
    import httpx

MAX_BODY_CHARS = 1000
PROVIDER_CODE_CHARS = 200
# 529 is the "overloaded" status some gateways pass through from upstreams.
TRANSIENT_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


def parse_retry_after(
    headers: httpx.Headers, *, now: Callable[[], float] = time.time
) -> int | None:
    """Milliseconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds
    or an HTTP date); ``None`` when absent or unreadable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            value = float(raw_ms)
        except ValueError:
            value = -1.0
        if value >= 0:
            return int(value)
    raw = headers.get("retry-after")
    if not raw:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - now()
    if seconds != seconds:  # NaN
        return None
    return max(0, int(seconds * 1000))


def _body_message(body: str) -> tuple[str | None, str | None]:
    """(message, provider code) from a JSON error body, when it has them."""
    try:
        data = json.loads(body)
    except ValueError:
        return None, None
    err: Any = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        message = err.get("message")
        code = err.get("code") or err.get("type")
        return (
            message if isinstance(message, str) else None,
            str(code) if isinstance(code, str | int) else None,
        )
    if isinstance(err, str):
        return err, None
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return data["message"], None
    return None, None


def _clip(text: str, redactor: SecretRedactor) -> str:
    # Redact first, then clip: see redact_then_clip.
    return redact_then_clip(text.strip(), redactor, MAX_BODY_CHARS)


def http_status_error(
    provider: str,
    response: httpx.Response,
    body: str,
    redactor: SecretRedactor,
    *,
    now: Callable[[], float] = time.time,
) -> ErrorInfo:
    status = response.status_code
    message, provider_code = _body_message(body)
    detail = message if message is not None else body
    text = f"{provider}: HTTP {status}"
    if detail.strip():
        text += f": {_clip(detail, redactor)}"
    info: ErrorInfo = {
        "message": redactor.redact_text(text),
        "code": str(status),
        "status": status,
        "retryable": status in TRANSIENT_STATUSES,
    }
    retry_after = parse_retry_after(response.headers, now=now)
    if retry_after is not None:
        info["retryAfterMs"] = retry_after
    if provider_code:
        info["details"] = {
            "providerCode": redact_then_clip(provider_code, redactor, PROVIDER_CODE_CHARS)
        }
    return info


def stream_error_info(provider: str, payload: Any, redactor: SecretRedactor) -> ErrorInfo:
    """An ``{"error": ...}`` object sent inside the stream (OpenRouter, vLLM do this)."""
    err = payload if isinstance(payload, dict) else {"message": str(payload)}
    message = err.get("message")
    text = f"{provider}: stream error"
    if isinstance(message, str) and message:
        text += f": {_clip(message, redactor)}"
    raw_code = err.get("code")
    info: ErrorInfo = {"message": redactor.redact_text(text), "code": "provider_stream_error"}
    # Some gateways put the upstream HTTP status in `code`; keep it classifiable.
    if isinstance(raw_code, int) and not isinstance(raw_code, bool) and 400 <= raw_code <= 599:
        info["code"] = str(raw_code)
        info["status"] = raw_code
        info["retryable"] = raw_code in TRANSIENT_STATUSES
    elif isinstance(raw_code, str) and raw_code:
        info["details"] = {
            "providerCode": redact_then_clip(raw_code, redactor, PROVIDER_CODE_CHARS)
        }
    return info


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment: what an error may show."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _refused(exc: BaseException) -> bool:
    """Whether a ``ConnectionRefusedError`` (ECONNREFUSED) caused ``exc``;
    httpx wraps it two or three levels down."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen or len(seen) > 32:
            continue
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or (
            isinstance(current, OSError) and current.errno == errno.ECONNREFUSED
        ):
            return True
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        stack.extend(getattr(current, "exceptions", ()) or ())
    return False


def transport_error_info(
    provider: str,
    exc: Exception,
    redactor: SecretRedactor,
    *,
    method: str = "POST",
    url: str | None = None,
) -> ErrorInfo:
    """Timeouts, resets, refused connections and other transport failures.

    The message names the request (method and URL without credentials or
    query) so a wrong base URL is visible at once; text is redacted, then clipped."""
    kind = type(exc).__name__
    detail = _clip(str(exc), redactor) if str(exc) else ""
    suffix = f" ({detail})" if detail else ""
    failure = _transport_failure(exc)
    if failure is None:
        return {
            "message": f"{provider}: provider failed: {kind}{suffix}",
            "code": "provider_exception",
            "details": {"kind": kind},
        }
    what, code, retryable = failure
    target = f" {method} {redactor.redact_text(safe_url(url))}" if url else ""
    info: ErrorInfo = {"message": f"{provider}: {what}:{target}: {kind}{suffix}", "code": code}
    if retryable:
        info["retryable"] = True
    info["details"] = {"kind": kind}
    return info


def _transport_failure(exc: Exception) -> tuple[str, str, bool] | None:
    """(what happened, code, retryable) for an httpx transport failure."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return "request timed out", "ETIMEDOUT", True
    if isinstance(exc, httpx.ConnectError):
        if _refused(exc):
            return "connection refused", "ECONNREFUSED", True
        return "could not connect", "ECONNRESET", True
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return "connection lost", "ECONNRESET", True
    if isinstance(exc, httpx.HTTPError):
        return "transport error", "transport_error", False
    return None


def describe_payload_error(provider: str, reason: str) -> ErrorInfo:
    return {"message": f"{provider}: {reason}", "code": "malformed_chunk", "retryable": True}


def incomplete_stream_info(provider: str, missing: str = "[DONE]") -> ErrorInfo:
    what = "a finish_reason" if missing == "no finish_reason" else "[DONE]"
    return {
        "message": f"{provider}: stream ended before {what}",
        "code": "stream_incomplete",
        "retryable": True,
    }


def stalled_stream_info(
    provider: str, seconds: float, redactor: SecretRedactor, *, url: str
) -> ErrorInfo:
    """No data event for ``seconds`` (the stream may have sent keep-alive
    comments meanwhile). Retryable like a read timeout: the runtime retries
    only while nothing has been streamed yet."""
    return {
        "message": f"{provider}: stream stalled: no data for {seconds:g} s "
        f"(keep-alive comments do not count): POST {redactor.redact_text(safe_url(url))}",
        "code": "ETIMEDOUT",
        "retryable": True,
        "details": {"kind": "StreamStalled"},
    }
