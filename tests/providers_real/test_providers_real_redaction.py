"""create_redactor and the ErrorInfo/event helpers over the native Redactor."""

from __future__ import annotations

import copy

import pytest

from prism.security import (
    NOOP_REDACTOR,
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
    import prism._native as native

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
    assert redact_error_info(info, NOOP_REDACTOR) is info  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="NOOP_REDACTOR"):
        redact_error_info(info, None)  # type: ignore[arg-type]


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
    # Listed explicitly as a secret, a short string is still refused...
    with pytest.raises(ConfigError, match="cannot redact these secrets"):
        create_openai_compatible_provider(base_url="https://x.invalid/v1", secrets=["abc"])


def test_a_short_api_key_is_accepted_unredacted_with_one_warning() -> None:
    # ...but an API key that short is a local server's placeholder (issue 20):
    # it is used, not redacted, and the warning says why without showing it.
    from prism.providers.openai_compatible import create_openai_compatible_provider
    from prism.security.redaction import _warned_short_credentials

    _warned_short_credentials.clear()
    with pytest.warns(RuntimeWarning, match="shorter than 4 characters") as caught:
        provider = create_openai_compatible_provider(
            base_url="http://127.0.0.1:1/v1", api_key="x", name="local"
        )
        create_openai_compatible_provider(
            base_url="http://127.0.0.1:1/v1", api_key="x", name="local"
        )
    assert len(caught) == 1
    assert "'x'" not in str(caught[0].message)
    assert provider._static_secrets == frozenset()


@pytest.mark.anyio
async def test_a_resolved_credential_too_short_is_used_not_refused() -> None:
    import httpx

    from prism.providers.openai_compatible import create_openai_compatible_provider
    from prism.security import callable_credential
    from prism.security.redaction import _warned_short_credentials

    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["authorization"])
        return httpx.Response(401, json={"error": {"message": "nope"}})

    _warned_short_credentials.clear()
    provider = create_openai_compatible_provider(
        base_url="https://x.invalid/v1",
        credential=callable_credential(lambda: "abc"),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )
    request = {"model": {"provider": "p", "model": "m"}, "messages": []}
    with pytest.warns(RuntimeWarning, match="not redacted"):
        events = [e async for e in provider.generate(request)]  # type: ignore[arg-type]
    assert seen == ["Bearer abc"]
    assert events[-1]["error"]["code"] == "401"
