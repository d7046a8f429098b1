"""Redact first, then clip (issue 11.1): a secret placed across every
truncation boundary the code has never leaves a prefix behind."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prism.providers._openai_compatible_errors import (
    MAX_BODY_CHARS,
    PROVIDER_CODE_CHARS,
    http_status_error,
    stream_error_info,
    transport_error_info,
)
from prism.resources import MAX_SHOWN_URI_CHARS, display_uri
from prism.security import create_redactor
from prism.security.redaction import redact_then_clip

SECRET = "sk-bound-'q\"-\\9f3a7c1e5b"
PREFIX = SECRET[:6]  # any surviving piece of the key starts like this
REDACTOR = create_redactor([SECRET])


def straddling(limit: int, lead: str = "") -> list[str]:
    """Texts where SECRET starts at every offset from fully-before to
    fully-after ``limit`` (counted after ``lead``, which the code strips or prefixes)."""
    return [
        "x" * start + SECRET + " tail" * 5
        for start in range(max(0, limit - len(SECRET) - 1), limit + 2)
    ]


def clean(value: object) -> bool:
    text = json.dumps(value) + json.dumps(value, ensure_ascii=False) + repr(value)
    return PREFIX not in text and "bound-" not in text


@pytest.mark.parametrize("text", straddling(MAX_BODY_CHARS))
def test_http_status_error_plain_body(text: str) -> None:
    info = http_status_error("p", httpx.Response(500), text, REDACTOR)
    assert clean(info), info["message"][-80:]


@pytest.mark.parametrize("text", straddling(MAX_BODY_CHARS))
def test_http_status_error_json_message_and_code(text: str) -> None:
    body = json.dumps({"error": {"message": text, "code": text[-PROVIDER_CODE_CHARS - 40 :]}})
    info = http_status_error("p", httpx.Response(401), body, REDACTOR)
    assert clean(info)


@pytest.mark.parametrize("text", straddling(PROVIDER_CODE_CHARS))
def test_provider_code_clip(text: str) -> None:
    body = json.dumps({"error": {"message": "m", "code": text}})
    assert clean(http_status_error("p", httpx.Response(400), body, REDACTOR))
    assert clean(stream_error_info("p", {"message": "m", "code": text}, REDACTOR))


@pytest.mark.parametrize("text", straddling(MAX_BODY_CHARS))
def test_sse_error_data(text: str) -> None:
    assert clean(stream_error_info("p", {"message": text}, REDACTOR))
    assert clean(stream_error_info("p", text, REDACTOR))


@pytest.mark.parametrize("text", straddling(MAX_BODY_CHARS))
@pytest.mark.parametrize(
    "kind", [httpx.ConnectError, httpx.ReadError, httpx.ReadTimeout, httpx.ProxyError, ValueError]
)
def test_transport_errors(text: str, kind: type[Exception]) -> None:
    info = transport_error_info(
        "p", kind(text), REDACTOR, url=f"https://u:{SECRET}@h/v1?k={SECRET}"
    )
    assert clean(info)


@pytest.mark.parametrize("text", straddling(MAX_SHOWN_URI_CHARS, "https://h.example/"))
def test_shown_resource_uri(text: str) -> None:
    shown = display_uri("https://h.example/" + text.replace(" ", "-"), REDACTOR)
    assert clean(shown)


@given(
    before=st.text(max_size=60),
    after=st.text(max_size=60),
    limit=st.integers(min_value=0, max_value=140),
)
def test_redact_then_clip_never_leaves_a_prefix(before: str, after: str, limit: int) -> None:
    # The surrounding text is arbitrary, so it may itself hold the prefix; only
    # check what the secret could have contributed.
    text = before + SECRET + after
    out = redact_then_clip(text, REDACTOR, limit)
    assert out.count(PREFIX) <= (before + after).count(PREFIX)
    assert len(out) <= max(limit, 0) + 1 or out == REDACTOR.redact_text(text)
