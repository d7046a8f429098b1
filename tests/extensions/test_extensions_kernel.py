from __future__ import annotations

from typing import Any

import pytest

from prism.errors import ExtensionError, RegistryClosedError
from prism.extensions import (
    ExtensionAPI,
    create_extension_kernel,
    define_extension,
)
from prism.middleware import create_middleware_registry
from prism.registries import create_contribution_registries
from prism.security import NOOP_REDACTOR, create_redactor
from prism.security.permissions import PermissionDecision, PermissionRequest

SECRET = "sk-live-0123456789abcdef"


def collect(kernel: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    kernel.on("*", events.append)
    return events


class Tool:
    def __init__(self, name: str) -> None:
        self.name = name


@pytest.mark.anyio
async def test_loads_in_order_and_registers_every_kind() -> None:
    order: list[str] = []

    def first(api: ExtensionAPI) -> None:
        order.append("first")
        api.register_tool(Tool("echo"))
        api.register_provider(Tool("mock"))
        api.register_model({"provider": "mock", "model": "m1"})
        api.register_compaction_strategy(Tool("llm-compaction"))
        api.register_retry_policy(object(), name="patient")
        api.register_input_builder(object(), name="input")
        api.register_prompt_builder(object(), name="prompt")
        api.register_context_provider({"name": "clock"})
        api.register_skill({"name": "review"})

    async def second(api: ExtensionAPI) -> None:
        order.append("second")
        api.register("command", "hello", object())

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    events = collect(kernel)
    report = await kernel.load(
        [define_extension("first", first, version="1.0.0"), define_extension("second", second)]
    )
    assert order == ["first", "second"]
    assert report.ok and report.loaded == ("first", "second")
    assert kernel.registries.models.resolve("mock/m1") == {"provider": "mock", "model": "m1"}
    assert kernel.registries.compaction_strategies.has("llm-compaction")
    assert kernel.registries.skills.has("review") and kernel.registries.commands.has("hello")
    assert [e["type"] for e in events] == [
        "extension_loading",
        "extension_loaded",
        "extension_loading",
        "extension_loaded",
        "kernel_loaded",
    ]
    assert events[0] == {"type": "extension_loading", "extension": "first", "version": "1.0.0"}
    assert events[1]["contributions"]["tool"] == ["echo"]
    assert events[1]["contributions"]["model"] == ["mock/m1"]
    assert events[-1] == {"type": "kernel_loaded", "loaded": ["first", "second"], "failed": []}


@pytest.mark.anyio
async def test_setup_error_is_isolated_rolled_back_and_redacted() -> None:
    def good(api: ExtensionAPI) -> None:
        api.register_tool(Tool("good-tool"))

    def bad(api: ExtensionAPI) -> None:
        api.register_tool(Tool("half"))
        api.use("provider_request", lambda value, next_: next_(value))
        api.on("kernel_loaded", lambda event: None)
        raise RuntimeError(f"could not reach service with key {SECRET}")

    def after(api: ExtensionAPI) -> None:
        api.register_tool(Tool("after-tool"))

    kernel = create_extension_kernel(redactor=create_redactor([SECRET]))
    events = collect(kernel)
    report = await kernel.load(
        [
            define_extension("good", good),
            define_extension("bad", bad),
            define_extension("after", after),
        ]
    )
    assert report.loaded == ("good", "after")
    assert [f.extension for f in report.failed] == ["bad"]
    # Rolled back: nothing half-registered remains.
    assert kernel.registries.tools.names() == ["good-tool", "after-tool"]
    assert kernel.middleware.list("provider_request") == []
    assert kernel.events.listener_count("kernel_loaded") == 1  # only the test's "*" listener
    errors = [e for e in events if e["type"] == "extension_error"]
    assert errors == [
        {
            "type": "extension_error",
            "extension": "bad",
            "phase": "setup",
            "error": {
                "message": "could not reach service with key [REDACTED]",
                "code": "extension_setup_failed",
            },
        }
    ]
    assert SECRET not in repr(events) and SECRET not in repr(report)
    assert events[-1]["failed"] == ["bad"]


@pytest.mark.anyio
async def test_error_without_message_reports_type_name() -> None:
    def bad(api: ExtensionAPI) -> None:
        raise KeyError()

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    report = await kernel.load([define_extension("bad", bad)])
    assert report.failed[0].error["message"] == "KeyError"


@pytest.mark.anyio
async def test_duplicate_registration_fails_only_the_later_extension() -> None:
    def owner(api: ExtensionAPI) -> None:
        api.register_tool(Tool("shared"), name="shared")

    def intruder(api: ExtensionAPI) -> None:
        api.register_tool(Tool("mine"))
        api.register_tool(Tool("shared"))  # raises DuplicateContributionError

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    events = collect(kernel)
    report = await kernel.load(
        [define_extension("owner", owner), define_extension("intruder", intruder)]
    )
    assert report.loaded == ("owner",)
    failure = report.failed[0]
    assert failure.phase == "setup"
    assert failure.error == {
        "message": "tool 'shared' is already registered",
        "code": "duplicate_contribution",
    }
    assert kernel.registries.tools.names() == ["shared"]
    assert kernel.registries.tools.resolve("shared").name == "shared"
    assert sum(e["type"] == "extension_error" for e in events) == 1


@pytest.mark.anyio
async def test_extension_keeping_api_cannot_register_after_setup() -> None:
    kept: list[ExtensionAPI] = []

    def sneaky(api: ExtensionAPI) -> None:
        kept.append(api)

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    await kernel.load([define_extension("sneaky", sneaky)])
    api = kept[0]
    with pytest.raises(RegistryClosedError, match="extension 'sneaky' cannot register tool 'late'"):
        api.register_tool(Tool("late"))
    with pytest.raises(RegistryClosedError, match="its setup has finished"):
        api.use("tool_call", lambda value, next_: next_(value))
    with pytest.raises(RegistryClosedError):
        api.on("extension_error", lambda event: None)
    assert not kernel.registries.tools.has("late")
    assert kernel.middleware.list("tool_call") == []


@pytest.mark.anyio
async def test_registries_freeze_after_load_unless_disabled() -> None:
    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    await kernel.load([])
    with pytest.raises(RegistryClosedError):
        kernel.registries.tools.register("late", object())

    registries = create_contribution_registries()
    open_kernel = create_extension_kernel(
        registries=registries, freeze_on_load=False, redactor=NOOP_REDACTOR
    )
    await open_kernel.load([])
    registries.tools.register("host-tool", object())
    assert open_kernel.registries is registries


@pytest.mark.anyio
async def test_kernel_loads_only_once() -> None:
    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    await kernel.load([])
    with pytest.raises(ExtensionError, match="already loaded"):
        await kernel.load([])
    assert kernel.state == "loaded"


@pytest.mark.anyio
async def test_load_rejects_non_list() -> None:
    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    with pytest.raises(ExtensionError, match="takes a list"):
        await kernel.load("extension")  # type: ignore[arg-type]
    assert kernel.state == "idle"


@pytest.mark.anyio
async def test_invalid_and_duplicate_extensions_are_reported() -> None:
    class NoSetup:
        name = "nosetup"

    def ok(api: ExtensionAPI) -> None:
        api.register_tool(Tool("a"))

    def again(api: ExtensionAPI) -> None:
        api.register_tool(Tool("b"))

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    events = collect(kernel)
    report = await kernel.load(
        [object(), NoSetup(), define_extension("ok", ok), define_extension("ok", again)]  # type: ignore[list-item]
    )
    assert report.loaded == ("ok",)
    assert [(f.extension, f.phase, f.error["message"]) for f in report.failed] == [
        ("#0", "validate", "extension #0 has no string 'name'"),
        ("nosetup", "validate", "extension 'nosetup' has no callable 'setup'"),
        ("ok", "validate", "an extension named 'ok' is already loaded"),
    ]
    assert kernel.registries.tools.names() == ["a"]
    assert [e["type"] for e in events].count("extension_loading") == 1


@pytest.mark.anyio
async def test_plain_class_extension_with_async_setup() -> None:
    class Plain:
        name = "plain"
        version = "0.2.0"

        async def setup(self, api: ExtensionAPI) -> None:
            api.register_skill({"name": "s"})

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    report = await kernel.load([Plain()])
    assert report.loaded == ("plain",)


@pytest.mark.anyio
async def test_denied_extension_is_not_set_up() -> None:
    ran: list[str] = []

    def setup(api: ExtensionAPI) -> None:
        ran.append("setup")

    class Policy:
        def check(self, request: PermissionRequest) -> PermissionDecision:
            assert request.kind == "extension"
            return PermissionDecision(request.name == "trusted", f"untrusted {SECRET}")

    kernel = create_extension_kernel(permission_policy=Policy(), redactor=create_redactor([SECRET]))
    events = collect(kernel)
    report = await kernel.load(
        [define_extension("untrusted", setup), define_extension("trusted", setup)]
    )
    assert ran == ["setup"]
    assert report.loaded == ("trusted",)
    failure = report.failed[0]
    assert (failure.extension, failure.phase) == ("untrusted", "permission")
    assert failure.error == {
        "message": "extension 'untrusted' is not permitted: untrusted [REDACTED]",
        "code": "permission_denied",
    }
    assert SECRET not in repr(events)


@pytest.mark.anyio
async def test_raising_policy_denies() -> None:
    class Broken:
        def check(self, request: PermissionRequest) -> bool:
            raise RuntimeError("boom")

    kernel = create_extension_kernel(permission_policy=Broken(), redactor=NOOP_REDACTOR)
    report = await kernel.load([define_extension("x", lambda api: None)])
    assert report.loaded == () and report.failed[0].phase == "permission"


@pytest.mark.anyio
async def test_middleware_errors_become_redacted_extension_error_events() -> None:
    def noisy(api: ExtensionAPI) -> None:
        def explode(value: Any, next_: Any) -> Any:
            raise ValueError(f"bad token {SECRET}")

        api.use("provider_request", explode)

    def tagger(api: ExtensionAPI) -> None:
        async def tag(value: dict[str, Any], next_: Any) -> Any:
            return await next_({**value, "tagged": True})

        api.use("provider_request", tag)

    kernel = create_extension_kernel(redactor=create_redactor([SECRET]))
    await kernel.load([define_extension("noisy", noisy), define_extension("tagger", tagger)])
    events = collect(kernel)
    result = await kernel.middleware.run("provider_request", {"metadata": {}})
    assert result == {"metadata": {}, "tagged": True}  # later middleware still ran
    assert events == [
        {
            "type": "extension_error",
            "extension": "noisy",
            "phase": "middleware",
            "hook": "provider_request",
            "error": {"message": "bad token [REDACTED]", "code": "middleware_error"},
        }
    ]


@pytest.mark.anyio
async def test_shared_host_middleware_registry_keeps_host_callback() -> None:
    seen: list[str] = []
    middleware = create_middleware_registry(on_error=lambda hook, error: seen.append(hook))
    kernel = create_extension_kernel(middleware=middleware, redactor=NOOP_REDACTOR)
    events = collect(kernel)

    def host_middleware(value: Any, next_: Any) -> Any:
        raise RuntimeError("host")

    middleware.use("context", host_middleware)
    await kernel.middleware.run("context", 1)
    assert kernel.middleware is middleware
    assert seen == ["context"]
    assert events[0]["extension"] is None and events[0]["phase"] == "middleware"


@pytest.mark.anyio
async def test_listener_errors_are_isolated_and_reported() -> None:
    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    received: list[str] = []

    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("listener broke")

    kernel.on("extension_loaded", broken)
    kernel.on("extension_loaded", lambda event: received.append(event["extension"]))
    errors: list[dict[str, Any]] = []
    kernel.on("extension_error", errors.append)
    report = await kernel.load([define_extension("a", lambda api: None)])
    assert report.loaded == ("a",)
    assert received == ["a"]
    assert errors == [
        {
            "type": "extension_error",
            "extension": "a",
            "phase": "listener",
            "event": "extension_loaded",
            "error": {"message": "listener broke", "code": "listener_error"},
        }
    ]


@pytest.mark.anyio
async def test_failing_error_listener_does_not_loop() -> None:
    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    calls: list[str] = []

    def always_fails(event: dict[str, Any]) -> None:
        calls.append(event.get("phase", ""))
        raise RuntimeError("again")

    kernel.on("extension_error", always_fails)
    report = await kernel.load([define_extension("bad", lambda api: 1 / 0)])
    assert [f.extension for f in report.failed] == ["bad"]
    assert calls == ["setup", "listener"]


@pytest.mark.anyio
async def test_extension_listeners_receive_later_lifecycle_events() -> None:
    seen: list[str] = []

    def watcher(api: ExtensionAPI) -> None:
        api.on("extension_loaded", lambda event: seen.append(event["extension"]))
        api.on("kernel_loaded", lambda event: seen.append("kernel"))

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    await kernel.load(
        [define_extension("watcher", watcher), define_extension("b", lambda api: None)]
    )
    assert seen == ["watcher", "b", "kernel"]


@pytest.mark.anyio
async def test_unsubscribe_inside_setup_then_failure_rolls_back_cleanly() -> None:
    def flaky(api: ExtensionAPI) -> None:
        off = api.use("retry", lambda value, next_: next_(value))
        off()
        raise RuntimeError("late failure")

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    report = await kernel.load([define_extension("flaky", flaky)])
    assert report.failed[0].error["message"] == "late failure"
    assert kernel.middleware.list("retry") == []


@pytest.mark.anyio
async def test_register_requires_a_name() -> None:
    def nameless(api: ExtensionAPI) -> None:
        api.register_retry_policy(object())

    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    report = await kernel.load([define_extension("nameless", nameless)])
    assert report.failed[0].error["message"] == (
        "cannot register retry policy: pass name= or give the value a string 'name'"
    )


def test_define_extension_validates() -> None:
    from prism.errors import ConfigError

    with pytest.raises(ConfigError, match="extension name"):
        define_extension("", lambda api: None)
    with pytest.raises(ConfigError, match="setup must be callable"):
        define_extension("x", "not callable")  # type: ignore[arg-type]
