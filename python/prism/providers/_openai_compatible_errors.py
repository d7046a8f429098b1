"""Failure side of the OpenAI-compatible adapter: wire failures -> ErrorInfo.

Codes are the safe, generic ones the retry policy classifies (``"429"``,
``"503"``, ``"ETIMEDOUT"``, ``"ECONNRESET"``, ...); bodies and messages are
redacted and truncated before they leave the adapter.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from prism.contracts import ErrorInfo
from prism.security.redaction import SecretRedactor

if TYPE_CHECKING:  # imported on use: see openai_compatible.py
    import httpx

MAX_BODY_CHARS = 1000
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


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_BODY_CHARS else text[:MAX_BODY_CHARS] + "…"


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
        text += f": {_clip(detail)}"
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
        info["details"] = {"providerCode": redactor.redact_text(provider_code)}
    return info


def stream_error_info(provider: str, payload: Any, redactor: SecretRedactor) -> ErrorInfo:
    """An ``{"error": ...}`` object sent inside the stream (OpenRouter, vLLM do this)."""
    err = payload if isinstance(payload, dict) else {"message": str(payload)}
    message = err.get("message")
    text = f"{provider}: stream error"
    if isinstance(message, str) and message:
        text += f": {_clip(message)}"
    raw_code = err.get("code")
    info: ErrorInfo = {"message": redactor.redact_text(text), "code": "provider_stream_error"}
    # Some gateways put the upstream HTTP status in `code`; keep it classifiable.
    if isinstance(raw_code, int) and not isinstance(raw_code, bool) and 400 <= raw_code <= 599:
        info["code"] = str(raw_code)
        info["status"] = raw_code
        info["retryable"] = raw_code in TRANSIENT_STATUSES
    elif isinstance(raw_code, str) and raw_code:
        info["details"] = {"providerCode": redactor.redact_text(raw_code)}
    return info


def transport_error_info(provider: str, exc: Exception, redactor: SecretRedactor) -> ErrorInfo:
    """Timeouts, resets, refused connections and other transport failures."""
    import httpx

    kind = type(exc).__name__
    detail = redactor.redact_text(_clip(str(exc))) if str(exc) else ""
    suffix = f" ({detail})" if detail else ""
    if isinstance(exc, httpx.TimeoutException):
        return {
            "message": f"{provider}: request timed out: {kind}{suffix}",
            "code": "ETIMEDOUT",
            "retryable": True,
            "details": {"kind": kind},
        }
    if isinstance(
        exc, httpx.ConnectError | httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError
    ):
        return {
            "message": f"{provider}: connection lost: {kind}{suffix}",
            "code": "ECONNRESET",
            "retryable": True,
            "details": {"kind": kind},
        }
    if isinstance(exc, httpx.HTTPError):
        return {
            "message": f"{provider}: transport error: {kind}{suffix}",
            "code": "transport_error",
            "details": {"kind": kind},
        }
    return {
        "message": f"{provider}: provider failed: {kind}{suffix}",
        "code": "provider_exception",
        "details": {"kind": kind},
    }


def describe_payload_error(provider: str, reason: str) -> ErrorInfo:
    return {"message": f"{provider}: {reason}", "code": "malformed_chunk", "retryable": True}


def incomplete_stream_info(provider: str) -> ErrorInfo:
    return {
        "message": f"{provider}: stream ended before [DONE]",
        "code": "stream_incomplete",
        "retryable": True,
    }
