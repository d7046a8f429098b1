from __future__ import annotations

from typing import Any

import anyio
import pytest

from prism.errors import ConfigError
from prism.extensions import ExtensionAPI, create_extension_kernel, define_extension
from prism.extensions._redaction import redact_json
from prism.security import NOOP_REDACTOR, create_redactor

# One redaction path: these helpers take the native-backed redactor object;
# there is no pure-Python fallback left to test.


def test_redacts_every_secret_longest_first() -> None:
    redactor = create_redactor(["secret-token-1234", "secret-token-1234-extended"])
    text = "a secret-token-1234-extended and secret-token-1234."
    assert redactor.redact_text(text) == "a [REDACTED] and [REDACTED]."


def test_bare_string_is_one_secret() -> None:
    redactor = create_redactor("abcdefgh12345678")
    assert redactor.redact_text("x abcdefgh12345678 a b") == "x [REDACTED] a b"


def test_too_short_secret_refused() -> None:
    with pytest.raises(ConfigError, match="cannot redact these secrets"):
        create_redactor(["abc", "long-enough-secret"])


def test_no_secrets_is_identity() -> None:
    redactor = create_redactor(["", None])
    assert redactor.redact_text("unchanged") == "unchanged"


def test_redact_json_covers_keys_and_nesting() -> None:
    redactor = create_redactor(["tok-0123456789abcdef"])
    value: Any = {"tok-0123456789abcdef": ["x tok-0123456789abcdef", 1, None]}
    assert redact_json(value, redactor) == {"[REDACTED]": ["x [REDACTED]", 1, None]}


def test_kernel_takes_the_hosts_redactor_never_a_list_never_a_silent_default() -> None:
    secret = "sk-kernel-0123456789abcdef"
    redactor = create_redactor([secret])
    kernel = create_extension_kernel(redactor=redactor)
    assert kernel.redactor is redactor
    assert kernel.redact(f"x {secret}") == "x [REDACTED]"
    assert create_extension_kernel(redactor=NOOP_REDACTOR).redactor is NOOP_REDACTOR
    with pytest.raises(TypeError, match="redactor"):
        create_extension_kernel()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="secrets"):
        create_extension_kernel(secrets=[secret])  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="create_redactor"):
        create_extension_kernel(redactor=[secret])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pass NOOP_REDACTOR"):
        create_extension_kernel(redactor=None)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_kernel_redacts() -> None:
    secret = "sk-kernel-0123456789abcdef"

    def bad(api: ExtensionAPI) -> None:
        raise RuntimeError(f"leak {secret}")

    kernel = create_extension_kernel(redactor=create_redactor([secret]))
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

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await kernel.load([define_extension("slow", slow)])
    assert scope.cancelled_caught
    assert not kernel.registries.tools.has("partial")
    assert kernel.state == "loaded" and kernel.registries.frozen
