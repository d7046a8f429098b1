"""The extension kernel: load host-provided extensions in order.

Each extension's ``setup(api)`` registers contributions, middleware and
event listeners through its own ``ExtensionAPI``. Setup is all-or-nothing per
extension: if it raises, everything it registered so far is rolled back, a
redacted ``extension_error`` event is emitted, and the next extension loads.
An extension's API closes when its setup returns, so an extension that keeps
``api`` and calls it later gets ``RegistryClosedError``.

Lifecycle events (plain dicts on ``kernel.events``):

- ``extension_loading``  {extension, version}
- ``extension_loaded``   {extension, version, contributions: {kind: [names]}, middleware: {hook: n}}
- ``extension_error``    {extension, phase, error: {message, code}, hook?}
  phase is ``"validate"`` (not an extension / duplicate name), ``"permission"``
  (denied by the policy; setup never ran), ``"setup"`` (setup raised; rolled
  back), ``"middleware"`` (a middleware raised later, during a hook run) or
  ``"listener"`` (an event listener raised).
- ``kernel_loaded``      {loaded: [names], failed: [names]}
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from prism.contracts import ErrorInfo
from prism.errors import ConfigError, ExtensionError, RegistryClosedError, error_info
from prism.extensions._redaction import redact_json
from prism.extensions.events import EventBus, EventHandler
from prism.middleware import Middleware, MiddlewareHookName, MiddlewareRegistry
from prism.registries import (
    ContributionRegistries,
    check_contribution_name,
)
from prism.security.permissions import PermissionPolicy, PermissionRequest, check_permission
from prism.security.redaction import SecretRedactor, require_redactor

ExtensionPhase = Literal["validate", "permission", "setup", "middleware", "listener"]
LIFECYCLE_EVENTS: frozenset[str] = frozenset(
    {"extension_loading", "extension_loaded", "extension_error", "kernel_loaded"}
)
_OWNER_ATTRIBUTE = "_prism_extension"


@runtime_checkable
class ExtensionLike(Protocol):
    """Anything with a ``name`` and a ``setup(api)`` (sync or async)."""

    @property
    def name(self) -> str: ...

    def setup(self, api: ExtensionAPI) -> Any: ...


@dataclass(frozen=True, slots=True)
class Extension:
    name: str
    setup: Callable[[ExtensionAPI], Any]
    version: str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        check_contribution_name("extension", self.name)
        if not callable(self.setup):
            raise ConfigError(f"extension {self.name!r}: setup must be callable")
        if self.version is not None and (not isinstance(self.version, str) or not self.version):
            raise ConfigError(f"extension {self.name!r}: version must be a non-empty string")


def define_extension(
    name: str,
    setup: Callable[[ExtensionAPI], Any],
    *,
    version: str | None = None,
    description: str = "",
) -> Extension:
    return Extension(name=name, setup=setup, version=version, description=description)


@dataclass(frozen=True, slots=True)
class ExtensionFailure:
    extension: str
    phase: ExtensionPhase
    error: ErrorInfo


@dataclass(frozen=True, slots=True)
class LoadReport:
    loaded: tuple[str, ...] = ()
    failed: tuple[ExtensionFailure, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.failed


def _name_of(kind: str, value: Any, name: str | None) -> str:
    if name is not None:
        return name
    candidate = value.get("name") if isinstance(value, Mapping) else getattr(value, "name", None)
    if not isinstance(candidate, str):
        raise ConfigError(f"cannot register {kind}: pass name= or give the value a string 'name'")
    return candidate


class ExtensionAPI:
    """What one extension's ``setup`` may touch. Every registration is
    recorded so the kernel can undo it if setup fails; the API refuses all
    registration once setup has returned."""

    def __init__(self, kernel: ExtensionKernel, extension_name: str) -> None:
        self._kernel = kernel
        self._extension_name = extension_name
        self._undo: list[Callable[[], None]] = []
        self._contributions: dict[str, list[str]] = {}
        self._middleware: dict[str, int] = {}
        self._closed = False

    @property
    def extension_name(self) -> str:
        return self._extension_name

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RegistryClosedError(
                f"extension {self._extension_name!r} cannot {what}: its setup has finished; "
                "extensions register only while setup runs"
            )

    # -- contributions -------------------------------------------------------------

    def register(self, kind: str, name: str, value: Any) -> None:
        """Register ``value`` under ``name`` in the ``kind`` registry (manifest
        spelling: ``"tool"``, ``"compactionStrategy"``, ...)."""
        self._check_open(f"register {kind} {name!r}")
        registry = self._kernel.registries.by_kind(kind)
        registry.register(name, value)
        self._undo.append(functools.partial(registry.unregister, name))
        self._contributions.setdefault(kind, []).append(name)

    def register_tool(self, tool: Any, *, name: str | None = None) -> None:
        self.register("tool", _name_of("tool", tool, name), tool)

    def register_provider(self, provider: Any, *, name: str | None = None) -> None:
        self.register("provider", _name_of("provider", provider, name), provider)

    def register_model(self, model: Mapping[str, Any], *, name: str | None = None) -> None:
        """Models are named ``"<provider>/<model>"`` unless ``name`` is given."""
        if name is None:
            provider, model_id = model.get("provider"), model.get("model")
            if not isinstance(provider, str) or not isinstance(model_id, str):
                raise ConfigError("cannot register model: it needs string 'provider' and 'model'")
            name = f"{provider}/{model_id}"
        self.register("model", name, model)

    def register_compaction_strategy(self, strategy: Any, *, name: str | None = None) -> None:
        kind = "compactionStrategy"
        self.register(kind, _name_of("compaction strategy", strategy, name), strategy)

    def register_retry_policy(self, policy: Any, *, name: str | None = None) -> None:
        self.register("retryPolicy", _name_of("retry policy", policy, name), policy)

    def register_input_builder(self, builder: Any, *, name: str | None = None) -> None:
        self.register("inputBuilder", _name_of("input builder", builder, name), builder)

    def register_prompt_builder(self, builder: Any, *, name: str | None = None) -> None:
        self.register("promptBuilder", _name_of("prompt builder", builder, name), builder)

    def register_context_provider(self, provider: Any, *, name: str | None = None) -> None:
        kind = "contextProvider"
        self.register(kind, _name_of("context provider", provider, name), provider)

    def register_skill(self, skill: Any, *, name: str | None = None) -> None:
        self.register("skill", _name_of("skill", skill, name), skill)

    def register_command(self, command: Any, *, name: str | None = None) -> None:
        self.register("command", _name_of("command", command, name), command)

    # -- middleware and events -----------------------------------------------------

    def use(self, hook: MiddlewareHookName, middleware: Middleware) -> Callable[[], None]:
        """Add middleware to the kernel's registry, tagged with this extension
        so a failure is reported against it."""
        self._check_open(f"add {hook!r} middleware")
        if not callable(middleware):
            raise ConfigError(f"middleware for {hook!r} must be callable")
        owner = self._extension_name

        @functools.wraps(middleware)
        async def tagged(value: Any, next_: Any) -> Any:
            try:
                result = middleware(value, next_)
                if inspect.isawaitable(result):
                    result = await result
                return result
            except Exception as error:
                if not hasattr(error, _OWNER_ATTRIBUTE):
                    try:
                        setattr(error, _OWNER_ATTRIBUTE, owner)
                    except AttributeError:
                        pass
                raise

        unsubscribe = self._kernel.middleware.use(hook, tagged)
        self._undo.append(unsubscribe)
        self._middleware[hook] = self._middleware.get(hook, 0) + 1
        return unsubscribe

    def on(self, event_type: str, handler: EventHandler) -> Callable[[], None]:
        self._check_open(f"listen to {event_type!r} events")
        unsubscribe = self._kernel.events.on(event_type, handler)
        self._undo.append(unsubscribe)
        return unsubscribe

    # -- kernel side ---------------------------------------------------------------

    def _close(self) -> None:
        self._closed = True

    def _rollback(self) -> None:
        for undo in reversed(self._undo):
            try:
                undo()
            except Exception:
                # The entry is already gone (the extension unsubscribed it
                # itself); rollback only needs it absent.
                pass
        self._undo.clear()
        self._contributions.clear()
        self._middleware.clear()


def _error_info(error: BaseException, redactor: SecretRedactor, default_code: str) -> ErrorInfo:
    return error_info(error, redactor, code=default_code)


class ExtensionKernel:
    def __init__(
        self,
        *,
        middleware: MiddlewareRegistry | None = None,
        registries: ContributionRegistries | None = None,
        permission_policy: PermissionPolicy | None = None,
        redactor: SecretRedactor,
        freeze_on_load: bool = True,
    ) -> None:
        self.registries = registries if registries is not None else ContributionRegistries()
        self.events = EventBus(on_listener_error=self._on_listener_error)
        self.permission_policy = permission_policy
        self.freeze_on_load = freeze_on_load
        # Built once here (or the host's own, e.g. the agent's): never per event.
        self.redactor = require_redactor(redactor, owner="extension kernel")
        self._state: Literal["idle", "loading", "loaded"] = "idle"
        self._loaded: list[str] = []
        self._failed: list[ExtensionFailure] = []
        self.middleware = middleware if middleware is not None else MiddlewareRegistry()
        self._install_middleware_reporter()

    def _install_middleware_reporter(self) -> None:
        # A host-supplied registry keeps its own on_error; the kernel's report
        # runs first and the host's callback after it.
        previous = self.middleware.on_error

        def on_error(hook: str, error: BaseException) -> None:
            self._report_middleware_error(hook, error)
            if previous is not None:
                previous(hook, error)

        self.middleware.on_error = on_error

    @property
    def state(self) -> str:
        return self._state

    @property
    def loaded(self) -> list[str]:
        return list(self._loaded)

    @property
    def failed(self) -> list[ExtensionFailure]:
        return list(self._failed)

    def redact(self, text: str) -> str:
        return self.redactor.redact_text(text)

    def on(self, event_type: str, handler: EventHandler) -> Callable[[], None]:
        """Host-side subscription to lifecycle (or ``"*"``) events."""
        return self.events.on(event_type, handler)

    def _emit(self, event: dict[str, Any]) -> None:
        self.events.emit(redact_json(event, self.redactor))

    def _fail(
        self,
        name: str,
        phase: ExtensionPhase,
        error: ErrorInfo,
        **extra: Any,
    ) -> None:
        failure = ExtensionFailure(extension=name, phase=phase, error=error)
        self._failed.append(failure)
        self._emit(
            {
                "type": "extension_error",
                "extension": name,
                "phase": phase,
                "error": dict(error),
                **extra,
            }
        )

    def _report_middleware_error(self, hook: str, error: BaseException) -> None:
        owner = getattr(error, _OWNER_ATTRIBUTE, None)
        event: dict[str, Any] = {
            "type": "extension_error",
            "extension": owner if isinstance(owner, str) else None,
            "phase": "middleware",
            "hook": hook,
            "error": dict(_error_info(error, self.redactor, "middleware_error")),
        }
        self._emit(event)

    def _on_listener_error(self, event: dict[str, Any], error: BaseException) -> None:
        # Never report a failure to handle a listener-error event: that
        # listener would fail again and loop.
        if event.get("type") == "extension_error" and event.get("phase") == "listener":
            return
        self._emit(
            {
                "type": "extension_error",
                "extension": event.get("extension"),
                "phase": "listener",
                "event": event.get("type"),
                "error": dict(_error_info(error, self.redactor, "listener_error")),
            }
        )

    async def load(self, extensions: Sequence[ExtensionLike]) -> LoadReport:
        """Set up ``extensions`` in order; an extension kernel loads once."""
        if self._state != "idle":
            raise ExtensionError("this extension kernel has already loaded; create a new kernel")
        if isinstance(extensions, (str, bytes, Mapping)) or not isinstance(extensions, Iterable):
            raise ExtensionError("load() takes a list of extensions")
        self._state = "loading"
        try:
            for index, extension in enumerate(list(extensions)):
                await self._load_one(index, extension)
        finally:
            self._state = "loaded"
            if self.freeze_on_load:
                self.registries.freeze()
        failed_names = [failure.extension for failure in self._failed]
        self._emit({"type": "kernel_loaded", "loaded": list(self._loaded), "failed": failed_names})
        return LoadReport(loaded=tuple(self._loaded), failed=tuple(self._failed))

    def _validate(self, index: int, extension: Any) -> tuple[str, str | None] | None:
        name = getattr(extension, "name", None)
        setup = getattr(extension, "setup", None)
        label = name if isinstance(name, str) and name else f"#{index}"
        problem: str | None = None
        if not isinstance(name, str):
            problem = f"extension #{index} has no string 'name'"
        elif not callable(setup):
            problem = f"extension {name!r} has no callable 'setup'"
        else:
            try:
                check_contribution_name("extension", name)
            except ConfigError as error:
                problem = str(error)
        if problem is None and label in self._loaded:
            problem = f"an extension named {label!r} is already loaded"
        if problem is not None:
            self._fail(label, "validate", {"message": problem, "code": "invalid_extension"})
            return None
        version = getattr(extension, "version", None)
        return label, version if isinstance(version, str) else None

    async def _load_one(self, index: int, extension: Any) -> None:
        validated = self._validate(index, extension)
        if validated is None:
            return
        name, version = validated
        self._emit({"type": "extension_loading", "extension": name, "version": version})
        decision = await check_permission(
            self.permission_policy,
            PermissionRequest(kind="extension", name=name, metadata={"version": version}),
        )
        if not decision.allowed:
            reason = self.redactor.redact_text(decision.reason or "denied by policy")
            message = f"extension {name!r} is not permitted: {reason}"
            self._fail(name, "permission", {"message": message, "code": "permission_denied"})
            return
        api = ExtensionAPI(self, name)
        try:
            result = extension.setup(api)
            if inspect.isawaitable(result):
                await result
        except Exception as error:
            api._close()
            api._rollback()
            self._fail(name, "setup", _error_info(error, self.redactor, "extension_setup_failed"))
            return
        except BaseException:
            # Cancellation: undo the half-finished setup, then let it propagate.
            api._close()
            api._rollback()
            raise
        api._close()
        self._loaded.append(name)
        self._emit(
            {
                "type": "extension_loaded",
                "extension": name,
                "version": version,
                "contributions": {k: list(v) for k, v in api._contributions.items()},
                "middleware": dict(api._middleware),
            }
        )


def create_extension_kernel(
    *,
    middleware: MiddlewareRegistry | None = None,
    registries: ContributionRegistries | None = None,
    permission_policy: PermissionPolicy | None = None,
    redactor: SecretRedactor,
    freeze_on_load: bool = True,
) -> ExtensionKernel:
    """A kernel sharing ``middleware``/``registries`` with the host when given.
    ``redactor`` (the agent's, ``agent.config.redactor``; ``NOOP_REDACTOR``
    when there are no secrets) masks every event the kernel emits. With
    ``freeze_on_load`` (the default) the registries close after ``load``."""
    return ExtensionKernel(
        middleware=middleware,
        registries=registries,
        permission_policy=permission_policy,
        redactor=redactor,
        freeze_on_load=freeze_on_load,
    )


__all__ = [
    "LIFECYCLE_EVENTS",
    "Extension",
    "ExtensionAPI",
    "ExtensionFailure",
    "ExtensionKernel",
    "ExtensionLike",
    "LoadReport",
    "create_extension_kernel",
    "define_extension",
]
