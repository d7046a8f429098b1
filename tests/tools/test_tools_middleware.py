"""The middleware registry (python/prism/middleware.py)."""

from __future__ import annotations

from typing import Any

import pytest

from prism.errors import ConfigError
from prism.middleware import HOOK_NAMES, create_middleware_registry


def test_ten_named_hooks() -> None:
    assert sorted(HOOK_NAMES) == sorted(
        [
            "provider_request",
            "input_assembly",
            "prompt_build",
            "context",
            "tool_call",
            "tool_result",
            "retry",
            "compaction",
            "session_start",
            "session_shutdown",
        ]
    )


@pytest.mark.anyio
async def test_no_middleware_returns_the_value_itself() -> None:
    registry = create_middleware_registry()
    value = {"metadata": {}}
    assert await registry.run("provider_request", value) is value
    assert not registry.has("provider_request")


@pytest.mark.anyio
async def test_order_next_and_async_middleware() -> None:
    registry = create_middleware_registry()
    order: list[str] = []

    async def first(value: Any, next: Any) -> Any:
        order.append("first")
        return await next({**value, "a": 1})

    def second(value: Any, next: Any) -> Any:
        order.append("second")
        return next({**value, "b": value["a"] + 1})

    registry.use("provider_request", first)
    registry.use("provider_request", second)
    assert await registry.run("provider_request", {}) == {"a": 1, "b": 2}
    assert order == ["first", "second"]
    assert registry.list("provider_request") == [first, second]


@pytest.mark.anyio
async def test_next_without_argument_passes_current_value() -> None:
    registry = create_middleware_registry()
    registry.use("context", lambda value, next: next())
    registry.use("context", lambda value, next: [*value, "x"])
    assert await registry.run("context", ["a"]) == ["a", "x"]


@pytest.mark.anyio
async def test_short_circuit_skips_later_middleware() -> None:
    registry = create_middleware_registry()
    later: list[Any] = []
    registry.use("retry", lambda value, next: "stop")
    registry.use("retry", lambda value, next: later.append(value))
    assert await registry.run("retry", "go") == "stop"
    assert later == []


@pytest.mark.anyio
async def test_unsubscribe_removes_only_that_middleware() -> None:
    registry = create_middleware_registry()
    unsubscribe = registry.use("tool_call", lambda value, next: next(value + 1))
    registry.use("tool_call", lambda value, next: next(value * 10))
    unsubscribe()
    unsubscribe()  # idempotent
    assert await registry.run("tool_call", 1) == 10


@pytest.mark.anyio
async def test_event_policy_reports_and_continues_with_current_value() -> None:
    errors: list[tuple[str, str]] = []
    registry = create_middleware_registry(
        on_error=lambda hook, error: errors.append((hook, str(error)))
    )

    def broken(value: Any, next: Any) -> Any:
        raise RuntimeError("boom")

    registry.use("prompt_build", lambda value, next: next([*value, "a"]))
    registry.use("prompt_build", broken)
    registry.use("prompt_build", lambda value, next: next([*value, "c"]))
    assert await registry.run("prompt_build", []) == ["a", "c"]
    assert errors == [("prompt_build", "boom")]


@pytest.mark.anyio
async def test_error_after_next_does_not_run_later_middleware_twice() -> None:
    errors: list[str] = []
    registry = create_middleware_registry(on_error=lambda hook, error: errors.append(str(error)))
    calls: list[Any] = []

    async def fails_late(value: Any, next: Any) -> Any:
        await next(value + 1)
        raise RuntimeError("after next")

    def counting(value: Any, next: Any) -> Any:
        calls.append(value)
        return next(value * 10)

    registry.use("compaction", fails_late)
    registry.use("compaction", counting)
    assert await registry.run("compaction", 1) == 20
    assert calls == [2]
    assert errors == ["after next"]


@pytest.mark.anyio
async def test_throw_policy_rejects_on_first_error() -> None:
    registry = create_middleware_registry(error_policy="throw")
    later: list[Any] = []

    def broken(value: Any, next: Any) -> Any:
        raise KeyError("bad")

    registry.use("session_start", broken)
    registry.use("session_start", lambda value, next: later.append(value))
    with pytest.raises(KeyError):
        await registry.run("session_start", {})
    assert later == []


def test_bad_registrations() -> None:
    with pytest.raises(ConfigError, match="error_policy must be"):
        create_middleware_registry(error_policy="ignore")  # type: ignore[arg-type]
    registry = create_middleware_registry()
    with pytest.raises(ConfigError, match="unknown middleware hook 'provider_response'"):
        registry.use("provider_response", lambda value, next: value)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be callable"):
        registry.use("retry", "nope")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown middleware hook"):
        registry.list("nope")  # type: ignore[arg-type]
    assert registry.list("retry") == []
