"""create_redactor and the ErrorInfo/event helpers over the native Redactor."""

from __future__ import annotations

import copy

import pytest

from prism.security import (
    NoopRedactor,
    SecretRedactor,
    create_redactor,
    redact_error_info,
    redact_event,
)
from prism.security.redaction import normalize_secrets

SECRET = "sk-canary-redaction-5f4e3d2c1b"


def test_no_secrets_gives_a_noop() -> None:
    for secrets in ([], None, [None, ""], ()):
        redactor = create_redactor(secrets)
        assert isinstance(redactor, NoopRedactor)
        assert len(redactor) == 0
        assert redactor.redact_text("plain") == "plain"
        value = {"a": ["b"]}
        assert redactor.redact_value(value) is value
        assert not redactor.contains("anything")


def test_secrets_use_the_native_redactor() -> None:
    native = pytest.importorskip("prism._native")
    redactor = create_redactor([SECRET, None, "", SECRET], mask="***")
    assert isinstance(redactor, native.Redactor)
    assert isinstance(redactor, SecretRedactor)
    assert len(redactor) == 1
    assert redactor.mask == "***"
    assert redactor.redact_text(f"key={SECRET};") == "key=***;"
    assert redactor.contains(f"x{SECRET}x")


def test_a_bare_string_is_one_secret_not_characters() -> None:
    assert normalize_secrets(SECRET) == (SECRET,)
    assert create_redactor(SECRET).redact_text("s k") == "s k"


def test_bad_secret_and_mask_types() -> None:
    with pytest.raises(TypeError, match="secrets must be strings, got int"):
        create_redactor([SECRET, 5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="mask must be a string"):
        create_redactor([SECRET], mask=None)  # type: ignore[arg-type]


def test_redact_error_info_copies_and_covers_details() -> None:
    info = {
        "message": f"HTTP 401: bad key {SECRET}",
        "code": "401",
        "status": 401,
        "details": {"echo": [SECRET], "n": 1},
    }
    before = copy.deepcopy(info)
    out = redact_error_info(info, create_redactor([SECRET]))  # type: ignore[arg-type]
    assert info == before
    assert out["message"] == "HTTP 401: bad key [REDACTED]"
    assert out["details"] == {"echo": ["[REDACTED]"], "n": 1}
    assert out["code"] == "401" and out["status"] == 401
    assert redact_error_info(info, None) is info  # type: ignore[arg-type]


def test_redact_event_leaves_the_original_alone() -> None:
    event = {"type": "content_delta", "text": f"the key is {SECRET}"}
    before = copy.deepcopy(event)
    out = redact_event(event, create_redactor([SECRET]))
    assert out == {"type": "content_delta", "text": "the key is [REDACTED]"}
    assert event == before
    assert redact_event(event, create_redactor([])) is event


def test_secrets_too_short_to_redact_are_a_config_error() -> None:
    from prism.errors import ConfigError
    from prism.providers.openai_compatible import create_openai_compatible_provider

    with pytest.raises(ConfigError, match="cannot redact these secrets: secret #0 is shorter"):
        create_redactor(["abc"])
    with pytest.raises(ConfigError, match="cannot redact these secrets"):
        create_openai_compatible_provider(base_url="https://x.invalid/v1", api_key="abc")


@pytest.mark.anyio
async def test_a_resolved_credential_too_short_is_a_credential_error_event() -> None:
    from prism.providers.openai_compatible import create_openai_compatible_provider
    from prism.security import callable_credential

    provider = create_openai_compatible_provider(
        base_url="https://x.invalid/v1", credential=callable_credential(lambda: "abc")
    )
    request = {"model": {"provider": "p", "model": "m"}, "messages": []}
    events = [e async for e in provider.generate(request)]  # type: ignore[arg-type]
    assert len(events) == 1
    assert events[0]["error"]["code"] == "credential_error"
    assert "resolved credential is unusable" in events[0]["error"]["message"]
    assert "abc" not in events[0]["error"]["message"].replace("cannot", "")
