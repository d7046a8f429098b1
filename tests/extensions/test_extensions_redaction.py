from __future__ import annotations

from typing import Any

import anyio
import pytest

import prism._native
from prism.errors import ConfigError
from prism.extensions import ExtensionAPI, create_extension_kernel, define_extension
from prism.extensions._redaction import make_text_redactor, redact_json


@pytest.fixture(params=["native-if-built", "fallback"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fallback":
        monkeypatch.delattr(prism._native, "Redactor", raising=False)
    return str(request.param)


def test_redacts_every_secret_longest_first(mode: str) -> None:
    redact = make_text_redactor(["secret-token-1234", "secret-token-1234-extended"])
    text = "a secret-token-1234-extended and secret-token-1234."
    assert redact(text) == "a [REDACTED] and [REDACTED]."


def test_bare_string_is_one_secret(mode: str) -> None:
    redact = make_text_redactor("abcdefgh12345678")
    assert redact("x abcdefgh12345678 a b") == "x [REDACTED] a b"


def test_too_short_secret_refused(mode: str) -> None:
    with pytest.raises(ConfigError, match="cannot redact these secrets"):
        make_text_redactor(["abc", "long-enough-secret"])
    with pytest.raises(ConfigError, match="cannot redact these secrets"):
        create_extension_kernel(secrets=["abc"])


def test_no_secrets_is_identity() -> None:
    redact = make_text_redactor(["", None])  # type: ignore[list-item]
    assert redact("unchanged") == "unchanged"


def test_redact_json_covers_keys_and_nesting(mode: str) -> None:
    redact = make_text_redactor(["tok-0123456789abcdef"])
    value: Any = {"tok-0123456789abcdef": ["x tok-0123456789abcdef", 1, None]}
    assert redact_json(value, redact) == {"[REDACTED]": ["x [REDACTED]", 1, None]}


@pytest.mark.anyio
async def test_kernel_redacts_in_both_modes(mode: str) -> None:
    secret = "sk-kernel-0123456789abcdef"

    def bad(api: ExtensionAPI) -> None:
        raise RuntimeError(f"leak {secret}")

    kernel = create_extension_kernel(secrets=[secret])
    events: list[dict[str, Any]] = []
    kernel.on("*", events.append)
    report = await kernel.load([define_extension("bad", bad)])
    assert report.failed[0].error["message"] == "leak [REDACTED]"
    assert secret not in repr(events)


@pytest.mark.anyio
async def test_cancelled_setup_is_rolled_back_and_propagates() -> None:
    async def slow(api: ExtensionAPI) -> None:
        api.register_tool(object(), name="partial")
        await anyio.lowlevel.checkpoint()

    kernel = create_extension_kernel()
    with anyio.CancelScope() as scope:
        scope.cancel()
        await kernel.load([define_extension("slow", slow)])
    assert scope.cancelled_caught
    assert not kernel.registries.tools.has("partial")
    assert kernel.state == "loaded" and kernel.registries.frozen
