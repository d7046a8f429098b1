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

    with pytest.raises(ConfigError, match="cannot redact these secrets: secret #0 is shorter"):
        create_redactor(["abc"])


@pytest.mark.parametrize("factory", ["openai_compatible", "anthropic", "openai_responses"])
def test_providers_take_the_agents_redactor_never_a_list_or_none(factory: str) -> None:
    import importlib

    module = importlib.import_module(f"prism.providers.{factory}")
    create = getattr(module, f"create_{factory}_provider")
    base = {"base_url": "https://x.invalid/v1"}
    with pytest.raises(TypeError, match="redactor"):
        create(**base)  # required: no silent no-op default
    with pytest.raises(TypeError, match="create_redactor"):
        create(**base, redactor=["a-secret-value"])
    with pytest.raises(TypeError, match="NOOP_REDACTOR"):
        create(**base, redactor=None)
    with pytest.raises(TypeError, match="secrets"):
        create(**base, redactor=NOOP_REDACTOR, secrets=["a-secret-value"])


def test_a_short_api_key_is_accepted_unredacted_with_one_warning() -> None:
    # ...but an API key that short is a local server's placeholder (issue 20):
    # it is used, not redacted, and the warning says why without showing it.
    from prism.providers.openai_compatible import create_openai_compatible_provider
    from prism.security.redaction import _warned_short_credentials

    _warned_short_credentials.clear()
    with pytest.warns(RuntimeWarning, match="shorter than 4 characters") as caught:
        provider = create_openai_compatible_provider(
            base_url="http://127.0.0.1:1/v1", api_key="x", name="local", redactor=NOOP_REDACTOR
        )
        create_openai_compatible_provider(
            base_url="http://127.0.0.1:1/v1", api_key="x", name="local", redactor=NOOP_REDACTOR
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
        redactor=NOOP_REDACTOR,
    )
    request = {"model": {"provider": "p", "model": "m"}, "messages": []}
    with pytest.warns(RuntimeWarning, match="not redacted"):
        events = [e async for e in provider.generate(request)]  # type: ignore[arg-type]
    assert seen == ["Bearer abc"]
    assert events[-1]["error"]["code"] == "401"


@pytest.mark.anyio
async def test_a_provider_error_masks_the_agents_secrets_and_its_own_key() -> None:
    import httpx

    from prism.providers.openai_compatible import create_openai_compatible_provider

    host_secret, key = "host-secret-4711", "sk-provider-key-0815"
    body = {"error": {"message": f"bad: {host_secret} and {key}"}}
    transport = httpx.MockTransport(lambda request: httpx.Response(400, json=body))
    async with httpx.AsyncClient(transport=transport) as client:
        provider = create_openai_compatible_provider(
            base_url="https://x.invalid/v1",
            api_key=key,
            http_client=client,
            redactor=create_redactor([host_secret]),
        )
        request = {"model": {"provider": "p", "model": "m"}, "messages": []}
        events = [event async for event in provider.generate(request)]  # type: ignore[arg-type]
    message = events[-1]["error"]["message"]
    assert host_secret not in message and key not in message
    assert message.count("[REDACTED]") == 2
