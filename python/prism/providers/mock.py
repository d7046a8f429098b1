"""A scripted provider for tests and demos: no network, no credentials, no timers
unless asked for.

A script is one of:

- a flat list of events: replayed on every provider turn;
- a list of lists: one list per provider turn, in order; a turn past the end
  yields an ``error`` event with code ``"mock_script_exhausted"``;
- a callable ``(request) -> events`` (a "function model"): sync or async, and
  the events may be a list, any iterable, or an async iterable.

An exception *instance* placed in a script is raised at that point, which is
how tests simulate a provider that crashes mid-stream. Requests are
deep-copied into ``.requests`` before the first event is produced, keeping
the most recent ``record`` of them (``DEFAULT_RECORD`` by default; ``True``
keeps all, ``False`` none), so a thousand-turn test does not hold a copy of
every message of every turn.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Sequence
from typing import Any, TypeAlias

import anyio
import anyio.lowlevel

from prism.contracts import ProviderEvent, ProviderRequest
from prism.errors import ConfigError
from prism.providers._tool_images import accepts_images, omit_tool_images
from prism.providers.base import provider_error, validate_provider_event

MockScriptFunction: TypeAlias = Callable[[ProviderRequest], Any]
# What ``script`` may be (documentation; the constructor checks at run time).
MockScript: TypeAlias = (
    "Sequence[ProviderEvent | BaseException] | Sequence[Sequence[ProviderEvent | BaseException]]"
    " | MockScriptFunction"
)

EXHAUSTED_CODE = "mock_script_exhausted"
# Requests kept in ``.requests`` unless ``record`` says otherwise.
DEFAULT_RECORD = 100


class MockProvider:
    """See the module docstring. ``turns`` counts ``generate`` calls so far
    (all of them, however many ``requests`` keeps)."""

    def __init__(
        self,
        script: Any,
        *,
        delay_ms: float = 0,
        name: str = "mock",
        record: bool | int = DEFAULT_RECORD,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError("mock provider name must be a non-empty string")
        if (
            not isinstance(delay_ms, int | float)
            or isinstance(delay_ms, bool)
            or not delay_ms >= 0  # also rejects NaN
        ):
            raise ConfigError(f"mock provider delay_ms must be a number >= 0, got {delay_ms!r}")
        self.name = name
        self.delay_ms = delay_ms
        self.record_limit = _record_limit(record)
        self.requests: list[ProviderRequest] = []
        self.turns = 0
        self._function: MockScriptFunction | None = None
        self._turn_scripts: list[list[Any]] | None = None
        self._replay: list[Any] | None = None
        if callable(script):
            self._function = script
        else:
            self._turn_scripts, self._replay = _parse_static_script(script)

    def generate(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        return self._generate(request)

    async def _generate(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        # What a real adapter would send: a text-only model gets a note in
        # place of each tool image, and the recorded request shows it.
        request = _as_model_sees(request)
        self._record(request)
        turn = self.turns
        self.turns += 1
        # Only a function model reads the request: it gets its own copy.
        seen = copy.deepcopy(request) if self._function is not None else request
        source = await self._events_for(seen, turn)
        delay = self.delay_ms / 1000
        async for item in source:
            if delay:
                await anyio.sleep(delay)
            else:
                # A checkpoint per event keeps a zero-delay mock cancellable.
                await anyio.lowlevel.checkpoint()
            if isinstance(item, BaseException):
                raise item
            try:
                event = validate_provider_event(item)
            except ValueError as error:
                raise ConfigError(f"mock provider turn {turn + 1}: {error}") from None
            yield copy.deepcopy(event)

    def _record(self, request: ProviderRequest) -> None:
        limit = self.record_limit
        if limit == 0:
            return
        requests = self.requests
        requests.append(copy.deepcopy(request))
        if limit is not None and len(requests) > limit:
            del requests[: len(requests) - limit]

    async def _events_for(self, request: ProviderRequest, turn: int) -> AsyncIterator[Any]:
        if self._function is not None:
            produced = self._function(request)
            if inspect.isawaitable(produced):
                produced = await produced
            return _as_async_iter(produced, turn)
        if self._replay is not None:
            return _as_async_iter(self._replay, turn)
        assert self._turn_scripts is not None
        if turn < len(self._turn_scripts):
            return _as_async_iter(self._turn_scripts[turn], turn)
        exhausted = provider_error(
            f"mock provider script exhausted: {len(self._turn_scripts)} turn(s) scripted,"
            f" turn {turn + 1} requested",
            EXHAUSTED_CODE,
        )
        return _as_async_iter([exhausted], turn)


def _as_model_sees(request: ProviderRequest) -> ProviderRequest:
    model = request.get("model") if isinstance(request, dict) else None
    if accepts_images(model):
        return request
    messages = request.get("messages")
    if not isinstance(messages, list):
        return request
    return {**request, "messages": omit_tool_images(messages, model)}


def create_mock_provider(
    script: Any, *, delay_ms: float = 0, name: str = "mock", record: bool | int = DEFAULT_RECORD
) -> MockProvider:
    """Build a :class:`MockProvider`; static scripts are validated here, at once.
    ``record``: how many of the latest requests ``.requests`` keeps (``True``
    all, ``False`` none)."""
    return MockProvider(script, delay_ms=delay_ms, name=name, record=record)


def _record_limit(record: object) -> int | None:
    """``None``: keep all; ``0``: keep none; else the most recent ``n``."""
    if record is True:
        return None
    if record is False:
        return 0
    if isinstance(record, int) and record >= 0:
        return record
    raise ConfigError(
        f"mock provider record must be True, False or an int >= 0 (requests kept), got {record!r}"
    )


def _parse_static_script(script: Any) -> tuple[list[list[Any]] | None, list[Any] | None]:
    if isinstance(script, str | bytes | dict) or not isinstance(script, Sequence):
        raise ConfigError(
            "mock provider script must be a list of events, a list of lists (one per turn),"
            f" or a callable; got {type(script).__name__}"
        )
    if not script:
        raise ConfigError("mock provider script is empty; give at least one event")
    nested = [isinstance(item, list | tuple) for item in script]
    if all(nested):
        turns = [list(turn) for turn in script]
        for index, turn in enumerate(turns):
            _check_items(turn, f"turn {index + 1}")
        return turns, None
    if any(nested):
        raise ConfigError(
            "mock provider script mixes events and lists; use a flat list of events"
            " or a list of per-turn lists"
        )
    items = list(script)
    _check_items(items, "script")
    return None, items


def _check_items(items: list[Any], where: str) -> None:
    if not items:
        raise ConfigError(f"mock provider {where} is empty; give at least one event")
    for position, item in enumerate(items):
        if isinstance(item, BaseException):
            continue
        try:
            validate_provider_event(item)
        except ValueError as error:
            raise ConfigError(f"mock provider {where}, event {position + 1}: {error}") from None


async def _as_async_iter(source: Any, turn: int) -> AsyncIterator[Any]:
    if isinstance(source, AsyncIterable):
        async for item in source:
            yield item
        return
    if isinstance(source, dict) or not isinstance(source, Iterable):
        raise ConfigError(
            f"mock provider turn {turn + 1}: script function must return events"
            f" (a list, iterable or async iterable), got {type(source).__name__}"
        )
    for item in source:
        yield item
