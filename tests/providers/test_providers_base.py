from __future__ import annotations

from typing import Any

import pytest

from prism.errors import ConfigError, UnknownNameError
from prism.providers import (
    create_mock_provider,
    create_provider_registry,
    error_info_from_exception,
    normalize_usage,
    provider_done,
    provider_error,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call,
    provider_tool_call_delta,
    provider_usage,
    validate_provider_event,
)
from prism.security import NOOP_REDACTOR, create_redactor


def test_event_helpers_build_wire_shapes() -> None:
    assert provider_text_delta("a") == {"type": "content_delta", "text": "a"}
    assert provider_thinking_delta("t", signature="s") == {
        "type": "thinking_delta",
        "text": "t",
        "signature": "s",
    }
    assert provider_tool_call("c1", "f", {"x": 1}) == {
        "type": "tool_call",
        "toolCall": {"id": "c1", "name": "f", "arguments": {"x": 1}},
    }
    assert provider_tool_call("c1", "f")["toolCall"]["arguments"] == {}
    assert provider_tool_call_delta(0, id="c1", name="f", arguments_delta='{"x"') == {
        "type": "tool_call_delta",
        "index": 0,
        "id": "c1",
        "name": "f",
        "argumentsDelta": '{"x"',
    }
    assert provider_usage(input_tokens=3, cacheReadTokens=1) == {
        "type": "usage",
        "usage": {"inputTokens": 3, "cacheReadTokens": 1},
    }
    assert provider_usage({"outputTokens": 2}) == {"type": "usage", "usage": {"outputTokens": 2}}
    assert provider_done() == {"type": "done"}
    assert provider_done("stop", {"total_tokens": 5}) == {
        "type": "done",
        "stopReason": "stop",
        "usage": {"totalTokens": 5},
    }
    assert provider_error("slow down", "429", status=429, retryable=True, retry_after_ms=50) == {
        "type": "error",
        "error": {
            "message": "slow down",
            "code": "429",
            "status": 429,
            "retryable": True,
            "retryAfterMs": 50,
        },
    }


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: provider_text_delta(1), TypeError, "text must be a string"),
        (lambda: provider_tool_call("c1", "f", [1]), TypeError, "arguments must be a mapping"),
        (lambda: provider_tool_call_delta(-1), ValueError, "non-negative int"),
        (lambda: provider_tool_call_delta(True), ValueError, "non-negative int"),
        (lambda: provider_usage(input_tokens=-1), ValueError, "input_tokens must be"),
        (lambda: provider_usage(bogus=1), ValueError, "unknown usage field 'bogus'"),
        (lambda: provider_error("x", retry_after_ms=-5), ValueError, "retry_after_ms"),
        (lambda: normalize_usage([1]), TypeError, "usage must be a mapping"),
    ],
)
def test_event_helpers_reject_bad_input(build: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        build()


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"type": "tool_call_delta", "index": 0, "name": 3}, "'name' must be a string"),
        ({"type": "tool_call", "toolCall": {"id": "a", "name": "b", "arguments": []}}, "arguments"),
        ({"type": "usage"}, "needs a 'usage' dict"),
        ({"type": "done", "usage": {"x": 1}}, "unknown usage field"),
        ({"type": "error", "error": {}}, "string 'message'"),
    ],
)
def test_validate_provider_event_names_the_field(event: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_provider_event(event)


def test_error_info_from_exception_redacts() -> None:
    redactor = create_redactor(["sk-live-123456"])
    info = error_info_from_exception(RuntimeError("bad key sk-live-123456"), redactor)
    assert info == {"message": "bad key [REDACTED]", "code": "provider_exception"}
    assert error_info_from_exception(ValueError(), NOOP_REDACTOR)["message"] == "ValueError"
    with pytest.raises(TypeError, match="NOOP_REDACTOR"):
        error_info_from_exception(ValueError(), None)  # type: ignore[arg-type]


def test_registry_registers_and_resolves() -> None:
    registry = create_provider_registry()
    provider = create_mock_provider([provider_done()], name="demo")
    assert registry.register_provider(provider) == "demo"
    assert registry.register_provider(provider, name="alias") == "alias"
    assert registry.resolve_provider("alias") is provider
    assert registry.list_providers() == ["demo", "alias"]
    registry.register_model({"provider": "demo", "model": "m1", "limits": {"contextWindow": 1000}})
    model = registry.resolve_model("demo", "m1")
    model["model"] = "edited"
    assert registry.resolve_model("demo", "m1")["model"] == "m1"
    assert [m["model"] for m in registry.list_models("demo")] == ["m1"]
    assert registry.list_models("other") == []


def test_registry_unknown_and_duplicate_names() -> None:
    registry = create_provider_registry()
    registry.register_provider(create_mock_provider([provider_done()]))
    with pytest.raises(UnknownNameError, match=r"unknown provider 'nope'; registered: \['mock'\]"):
        registry.resolve_provider("nope")
    with pytest.raises(UnknownNameError, match="unknown model 'x' for provider 'mock'"):
        registry.resolve_model("mock", "x")
    with pytest.raises(ConfigError, match="already registered"):
        registry.register_provider(create_mock_provider([provider_done()]))
    registry.register_model({"provider": "mock", "model": "m"})
    with pytest.raises(ConfigError, match="already registered"):
        registry.register_model({"provider": "mock", "model": "m"})
    assert registry.list_providers() == ["mock"]


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("mock/m", "must be a dict"),
        ({"provider": "", "model": "m"}, "'provider'"),
        ({"provider": "p"}, "'model'"),
        ({"provider": "p", "model": "m", "limits": {"contextWindow": 0}}, "positive int"),
        ({"provider": "p", "model": "m", "limits": []}, "'limits' must be a dict"),
    ],
)
def test_registry_rejects_bad_models(model: Any, message: str) -> None:
    registry = create_provider_registry()
    with pytest.raises(ConfigError, match=message):
        registry.register_model(model)
    assert registry.list_models() == []


def test_registry_rejects_non_providers() -> None:
    registry = create_provider_registry()
    with pytest.raises(ConfigError, match="generate"):
        registry.register_provider(object())  # type: ignore[arg-type]
