"""One way from an exception to ErrorInfo, always through a redactor object."""

from __future__ import annotations

import pytest

from prism.errors import (
    ConfigError,
    DuplicateEntryError,
    PrismError,
    ProviderError,
    StoreError,
    error_info,
)
from prism.security import NOOP_REDACTOR, create_redactor

SECRET = "sk-errinfo-0123456789abcdef"


def test_to_error_info_keeps_details() -> None:
    error = PrismError("bad thing", code="bad", field="model", limits=[1, 2], obj=object())
    info = error.to_error_info()
    assert info["message"] == "bad thing" and info["code"] == "bad"
    # Non-JSON detail values are named by type, never repr'd (a repr may hold a secret).
    assert info["details"] == {"field": "model", "limits": [1, 2], "obj": "<object>"}
    assert "details" not in ConfigError("x").to_error_info()


def test_duplicate_entry_is_a_store_error() -> None:
    error = DuplicateEntryError("duplicate session entry id 'a'")
    assert isinstance(error, StoreError) and isinstance(error, ValueError)
    assert error.code == "duplicate_entry"


def test_error_info_for_prism_and_foreign_errors() -> None:
    redactor = create_redactor([SECRET])
    assert error_info(RuntimeError(f"boom {SECRET}"), redactor) == {
        "message": "boom [REDACTED]",
        "code": "runtime_error",
    }
    assert error_info(ValueError(), NOOP_REDACTOR) == {
        "message": "ValueError",
        "code": "runtime_error",
    }
    assert error_info(OSError("disk"), NOOP_REDACTOR, code="internal_error", with_type=True) == {
        "message": "OSError: disk",
        "code": "internal_error",
    }
    prism_error = PrismError(f"bad {SECRET}", code="x", where=SECRET)
    assert error_info(prism_error, redactor) == {
        "message": "bad [REDACTED]",
        "code": "x",
        "details": {"where": "[REDACTED]"},
    }
    provider = ProviderError({"message": f"HTTP 401 {SECRET}", "code": "401", "status": 401})
    out = error_info(provider, redactor)
    assert out == {"message": "HTTP 401 [REDACTED]", "code": "401", "status": 401}
    assert provider.info["message"].endswith(SECRET)  # the original is not edited


@pytest.mark.parametrize("bad", [None, [SECRET], (SECRET,), SECRET, object()])
def test_error_info_refuses_anything_but_a_redactor(bad: object) -> None:
    with pytest.raises(TypeError, match="redactor must be a SecretRedactor"):
        error_info(RuntimeError("x"), bad)  # type: ignore[arg-type]


def test_repr_built_exception_text_is_redacted() -> None:
    # KeyError's str() is the repr of its key; a quote in the secret changes the spelling.
    secret = "sk-'quoted\"-\\back-0123"
    redactor = create_redactor([secret])
    for error in (KeyError(secret), KeyError("pre " + secret), ValueError(repr([secret]))):
        info = error_info(error, redactor)
        assert "REDACTED" in info["message"], info
        assert "quoted" not in info["message"], info
