"""The attention binding takes the native Redactor itself (no Python method
lookup by name): anything else is refused, and a redactor without secrets
plans exactly as no redactor."""

from __future__ import annotations

from typing import Any

import pytest

from prism import _native as native
from prism.security.redaction import NoopRedactor

SECRET = "sk-live-abcdef123456"


def history() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(4):
        out.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_call", "id": f"c{i}", "name": "read", "arguments": {}}],
            }
        )
        payload = {"body": f"token={SECRET} " + "z" * 3000}
        out.append(
            {
                "role": "tool",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": f"c{i}",
                        "name": "read",
                        "result": payload,
                    }
                ],
            }
        )
    return out


def plan(redactor: Any) -> dict[str, Any]:
    groups: list[Any] = [[], [], history(), [], [], []]
    mutable = [False, False, True, False, False, True]
    return native.attention_plan(
        groups, mutable, [[], [], []], 2000, 0.5, None, 0, 0, [], None, None, redactor, None
    )


class LooksLikeARedactor:
    """Has the method the binding used to look up by name; not accepted."""

    def redact_value(self, value: Any) -> Any:
        return value

    def __len__(self) -> int:
        return 1


@pytest.mark.parametrize("bad", [LooksLikeARedactor(), NoopRedactor(), "secret"])
def test_anything_but_the_native_redactor_is_refused(bad: Any) -> None:
    with pytest.raises(TypeError, match="Redactor"):
        plan(bad)


def test_empty_redactor_plans_like_none() -> None:
    assert plan(native.Redactor([])) == plan(None)


def test_native_redactor_changes_the_stub_size_and_digest() -> None:
    without, with_secret = plan(None), plan(native.Redactor([SECRET]))
    assert without["stubbedToolResults"] == with_secret["stubbedToolResults"] > 0
    # The secret (20 chars) becomes "[REDACTED]" (10) before sizing/hashing.
    assert with_secret["stubbedBytes"] < without["stubbedBytes"]
    texts = [t for _, _, _, stubs in with_secret["rows"] for _, t in stubs]
    assert texts and all(SECRET not in t for t in texts)
    assert texts != [t for _, _, _, stubs in without["rows"] for _, t in stubs]
