"""Secrets in escaped form (issue 11.8): repr- and JSON-escaped spellings of a
secret are masked wherever the plain one is. The matrix crosses secret shapes
with the places that format text with ``repr()`` or ``json.dumps``."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prism.errors import error_info
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.providers._openai_compatible_errors import http_status_error, stream_error_info
from prism.runtime import create_agent
from prism.security import create_redactor
from prism.security.redaction import escaped_forms
from prism.tools import create_tool_registry, define_tool, dispatch_tool_call

SHAPES = [
    "sk-plain-0123456789",
    "sk-'single-0123",
    'sk-"double-0123',
    "sk-'both\"-0123",
    "sk-back\\slash-0123",
    "sk-nl\nline-0123",
    "sk-tab\t-é-ü-0123",
    "sk-ctl\x01\x7f-0123",
]


def spellings(secret: str) -> list[str]:
    return [secret, *escaped_forms(secret)]


def leaks(secret: str, text: str) -> list[str]:
    return [form for form in spellings(secret) if form in text]


def every_rendering(value: Any) -> str:
    return "\n".join(
        [json.dumps(value), json.dumps(value, ensure_ascii=False), repr(value), str(value)]
    )


@pytest.mark.parametrize("secret", SHAPES)
@pytest.mark.anyio
async def test_unknown_tool_name_is_redacted(secret: str) -> None:
    result = await dispatch_tool_call(
        {"id": "c1", "name": f"x{secret}y", "arguments": {}},
        registry=create_tool_registry([]),
        redactor=create_redactor([secret]),
    )
    assert result["value"]["code"] == "unknown_tool"
    assert not leaks(secret, result["value"]["message"])


@pytest.mark.parametrize("secret", SHAPES)
@pytest.mark.parametrize(
    "make", [KeyError, lambda s: ValueError(repr({"k": s})), lambda s: RuntimeError(repr([s]))]
)
def test_repr_built_exception_text(secret: str, make: Any) -> None:
    info = error_info(make(secret), create_redactor([secret]))
    assert not leaks(secret, every_rendering(info))


@pytest.mark.parametrize("secret", SHAPES)
def test_provider_bodies_echoing_json_escaped_secrets(secret: str) -> None:
    redactor = create_redactor([secret])
    body = json.dumps({"error": {"message": f"bad key {secret!r}", "code": secret}})
    info = http_status_error("p", httpx.Response(401), body, redactor)
    assert not leaks(secret, every_rendering(info))
    raw = json.dumps({"detail": secret})  # not the {"error": ...} shape: shown as raw JSON text
    assert not leaks(
        secret, every_rendering(http_status_error("p", httpx.Response(500), raw, redactor))
    )
    assert not leaks(
        secret, every_rendering(stream_error_info("p", {"message": repr(secret)}, redactor))
    )


@pytest.mark.parametrize("secret", SHAPES)
@pytest.mark.anyio
async def test_a_session_never_shows_any_spelling(secret: str) -> None:
    def fails(args: dict[str, Any], ctx: Any) -> None:
        raise KeyError(secret)

    script = [
        [
            provider_text_delta(f"text {secret!r} {json.dumps(secret)}"),
            provider_tool_call("c1", "fails", {}),
            provider_done(),
        ],
        [provider_tool_call("c2", f"no-such-{secret}", {}), provider_done()],
        [provider_text_delta("end"), provider_done()],
    ]
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=create_mock_provider(script),
        tools=[define_tool("fails", fails)],
        secrets=[secret],
    )
    session = agent.create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    await session.run(f"hi {[secret]}")
    assert not leaks(secret, every_rendering(events))
    assert not leaks(secret, every_rendering(await session.entries()))


@settings(max_examples=150)
@given(
    # Without brackets, no spelling can straddle the mask's edge, and none
    # lies inside the mask: a leak is then a real leak.
    st.text(min_size=4, max_size=16).filter(
        lambda s: s not in "[REDACTED]" and "[" not in s and "]" not in s
    ),
    st.text(max_size=10),
)
def test_any_secret_any_rendering(secret: str, around: str) -> None:
    """The class: for any secret, its repr/JSON renderings inside any text are masked."""
    redactor = create_redactor([secret])
    for text in (repr(around + secret), json.dumps(around + secret), repr([secret, around])):
        out = redactor.redact_text(text)
        assert leaks(secret, text), (secret, text)  # some spelling of it is in the text
        assert not leaks(secret, out), (secret, text, out)
