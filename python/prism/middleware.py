"""Ordered, host-owned middleware hooks (reference: middleware-hooks.md).

A middleware is ``(value, next) -> value`` (sync or async). It may call
``await next(updated)`` to hand an updated value to later middleware, or
return a value without calling ``next`` to short-circuit the rest.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, get_args, overload

from prism.errors import ConfigError

if TYPE_CHECKING:
    # Types only: these modules run hooks, so importing them here at run
    # time would be a cycle.
    from prism.assembly.context import ContextBlock
    from prism.assembly.skills import Skill
    from prism.compaction.options import CompactionContext, CompactionResult
    from prism.contracts import Message, ProviderRequest, ToolCall, ToolDeclaration, ToolResult
    from prism.retry import RetryContext, RetryDecision

MiddlewareHookName = Literal[
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
HOOK_NAMES: frozenset[str] = frozenset(get_args(MiddlewareHookName))


# --- the value each hook's middleware receives and returns --------------------


class PromptBuildPayload(TypedDict):
    """``prompt_build``: return it with the final ``messages``."""

    messages: list[Message]
    context: list[ContextBlock]
    skills: list[Skill]
    tools: list[ToolDeclaration]


class RetryHookPayload(TypedDict):
    """``retry``: a returned ``decision`` may stop the retry or shorten its
    delay, never start a retry the policy refused or wait longer."""

    context: RetryContext
    decision: RetryDecision


class CompactionHookPayload(TypedDict):
    """``compaction``: a returned ``result`` replaces the strategy's."""

    context: CompactionContext
    result: CompactionResult


class SessionHookPayload(TypedDict):
    """``session_start`` / ``session_shutdown``."""

    sessionId: str


class MiddlewarePayloads(TypedDict):
    """The payload type of every hook, keyed by hook name (the map behind
    the typed ``use``/``run`` overloads; a test keeps it equal to
    ``MiddlewareHookName``)."""

    provider_request: ProviderRequest
    input_assembly: list[Message]
    prompt_build: PromptBuildPayload
    context: list[ContextBlock]
    tool_call: ToolCall
    tool_result: ToolResult
    retry: RetryHookPayload
    compaction: CompactionHookPayload
    session_start: SessionHookPayload
    session_shutdown: SessionHookPayload


_P = TypeVar("_P")

MiddlewareNext = Callable[[Any], Awaitable[Any]]
Middleware = Callable[[Any, MiddlewareNext], Any]
HookMiddleware = Callable[[_P, Callable[[_P], Awaitable[_P]]], "_P | Awaitable[_P]"]
"""A middleware for a hook whose payload is ``_P``: ``HookMiddleware[ToolCall]``."""
ErrorPolicy = Literal["event", "throw"]
OnMiddlewareError = Callable[[str, BaseException], None]


# The session running a hook reports failures as its own redacted
# ``extension_error`` events. A registry is shared by every session of an
# agent, so the reporter travels with the task (a context variable), not
# with the registry.
_session_reporter: ContextVar[OnMiddlewareError | None] = ContextVar(
    "prism_middleware_reporter", default=None
)


@contextmanager
def report_middleware_errors(reporter: OnMiddlewareError) -> Iterator[None]:
    """Within this block (and tasks started from it), a middleware failing
    under ``error_policy="event"`` is also passed to ``reporter(hook, error)``,
    after the registry's own ``on_error``."""
    token = _session_reporter.set(reporter)
    try:
        yield
    finally:
        _session_reporter.reset(token)


def _check_hook(hook: str) -> None:
    if hook not in HOOK_NAMES:
        raise ConfigError(f"unknown middleware hook {hook!r}; expected one of {sorted(HOOK_NAMES)}")


class MiddlewareRegistry:
    """With ``error_policy="event"`` a failing middleware is reported through
    ``on_error`` and to the session running the hook (which emits a redacted
    ``extension_error`` event), and later middleware still runs with the current value, at most
    once: if the failing middleware had already called ``next``, the result of
    that downstream call is kept. With
    ``"throw"`` the first failure propagates out of ``run``."""

    def __init__(
        self, error_policy: ErrorPolicy = "event", on_error: OnMiddlewareError | None = None
    ) -> None:
        if error_policy not in ("event", "throw"):
            raise ConfigError(f"error_policy must be 'event' or 'throw', got {error_policy!r}")
        self.error_policy: ErrorPolicy = error_policy
        self.on_error = on_error
        self._hooks: dict[str, list[Middleware]] = {}

    @overload
    def use(
        self, hook: Literal["provider_request"], middleware: HookMiddleware[ProviderRequest]
    ) -> Callable[[], None]: ...
    @overload
    def use(
        self, hook: Literal["input_assembly"], middleware: HookMiddleware[builtins.list[Message]]
    ) -> Callable[[], None]: ...
    @overload
    def use(
        self, hook: Literal["prompt_build"], middleware: HookMiddleware[PromptBuildPayload]
    ) -> Callable[[], None]: ...
    @overload
    def use(
        self, hook: Literal["context"], middleware: HookMiddleware[builtins.list[ContextBlock]]
    ) -> Callable[[], None]: ...
    @overload
    def use(
        self, hook: Literal["tool_call"], middleware: HookMiddleware[ToolCall]
    ) -> Callable[[], None]: ...
    @overload
    def use(
        self, hook: Literal["tool_result"], middleware: HookMiddleware[ToolResult]
    ) -> Callable[[], None]: ...
    @overload
    def use(
        self, hook: Literal["retry"], middleware: HookMiddleware[RetryHookPayload]
    ) -> Callable[[], None]: ...
    @overload
    def use(
        self, hook: Literal["compaction"], middleware: HookMiddleware[CompactionHookPayload]
    ) -> Callable[[], None]: ...
    @overload
    def use(
        self, hook: Literal["session_start"], middleware: HookMiddleware[SessionHookPayload]
    ) -> Callable[[], None]: ...
    @overload
    def use(
        self, hook: Literal["session_shutdown"], middleware: HookMiddleware[SessionHookPayload]
    ) -> Callable[[], None]: ...
    @overload
    def use(self, hook: MiddlewareHookName, middleware: Middleware) -> Callable[[], None]: ...
    def use(self, hook: MiddlewareHookName, middleware: Middleware) -> Callable[[], None]:
        """Append ``middleware`` to ``hook``'s chain; returns its remover. The
        payload a hook's middleware gets is ``MiddlewarePayloads[hook]``."""
        _check_hook(hook)
        if not callable(middleware):
            raise ConfigError(f"middleware for {hook!r} must be callable")
        chain = self._hooks.setdefault(hook, [])
        chain.append(middleware)

        def unsubscribe() -> None:
            if middleware in chain:
                chain.remove(middleware)

        return unsubscribe

    def copy(self) -> MiddlewareRegistry:
        """A registry with the same policy and chains; later ``use`` on either
        does not reach the other."""
        twin = MiddlewareRegistry(self.error_policy, self.on_error)
        twin._hooks = {hook: list(chain) for hook, chain in self._hooks.items()}
        return twin

    def list(self, hook: MiddlewareHookName) -> list[Middleware]:
        _check_hook(hook)
        return list(self._hooks.get(hook, ()))

    def has(self, hook: MiddlewareHookName) -> bool:
        return bool(self._hooks.get(hook))

    @overload
    async def run(
        self, hook: Literal["provider_request"], value: ProviderRequest
    ) -> ProviderRequest: ...
    @overload
    async def run(
        self, hook: Literal["input_assembly"], value: builtins.list[Message]
    ) -> builtins.list[Message]: ...
    @overload
    async def run(
        self, hook: Literal["prompt_build"], value: PromptBuildPayload
    ) -> PromptBuildPayload: ...
    @overload
    async def run(
        self, hook: Literal["context"], value: builtins.list[ContextBlock]
    ) -> builtins.list[ContextBlock]: ...
    @overload
    async def run(self, hook: Literal["tool_call"], value: ToolCall) -> ToolCall: ...
    @overload
    async def run(self, hook: Literal["tool_result"], value: ToolResult) -> ToolResult: ...
    @overload
    async def run(self, hook: Literal["retry"], value: RetryHookPayload) -> RetryHookPayload: ...
    @overload
    async def run(
        self, hook: Literal["compaction"], value: CompactionHookPayload
    ) -> CompactionHookPayload: ...
    @overload
    async def run(
        self, hook: Literal["session_start"], value: SessionHookPayload
    ) -> SessionHookPayload: ...
    @overload
    async def run(
        self, hook: Literal["session_shutdown"], value: SessionHookPayload
    ) -> SessionHookPayload: ...
    async def run(self, hook: MiddlewareHookName, value: Any) -> Any:
        """Run ``hook``'s chain on ``value``. The return value is whatever
        the chain returned: callers still check its shape, since a host's
        middleware is not type checked at run time."""
        _check_hook(hook)
        chain = list(self._hooks.get(hook, ()))
        if not chain:
            return value

        async def call(index: int, current: Any) -> Any:
            if index >= len(chain):
                return current
            middleware = chain[index]

            downstream: list[Any] = []

            async def next_(updated: Any = current) -> Any:
                outcome = await call(index + 1, updated)
                downstream.append(outcome)
                return outcome

            try:
                result = middleware(current, next_)
                if inspect.isawaitable(result):
                    result = await result
            except Exception as error:
                if self.error_policy == "throw":
                    raise
                if self.on_error is not None:
                    self.on_error(hook, error)
                reporter = _session_reporter.get()
                if reporter is not None:
                    reporter(hook, error)
                if downstream:
                    # It failed after handing on: later middleware already ran;
                    # keep their result instead of running them a second time.
                    return downstream[-1]
                return await call(index + 1, current)
            return result

        return await call(0, value)


def create_middleware_registry(
    error_policy: ErrorPolicy = "event", on_error: OnMiddlewareError | None = None
) -> MiddlewareRegistry:
    return MiddlewareRegistry(error_policy=error_policy, on_error=on_error)
