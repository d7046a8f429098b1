"""``RunStream``: the events of one run as an async iterator that is safe to
abandon.

The run executes in its own task, started without a task group (an asyncio
task, or a trio system task), so nothing the consumer's task entered is held
across the points where it receives events. Breaking out of the loop,
raising in its body, leaving ``async with session.stream(...)`` early or
dropping the iterator therefore never wedges the session: the run is
aborted and the session released (at once when the iterator is dropped;
``aclose``/``async with`` also wait until the aborted run has wound down).
A next run accepted meanwhile waits for the dropped run's closing writes
before it appends anything (``prism.runtime.writer``).
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Awaitable, Callable, Coroutine
from types import TracebackType
from typing import Any

import anyio
import sniffio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from prism.contracts import AgentEvent
from prism.errors import PrismError
from prism.runtime.context import Run, RunClaim
from prism.runtime.result import RunResult

__all__ = ["RunStream", "spawn_detached"]

# Strong references to running asyncio tasks (the loop keeps only weak ones).
_BACKGROUND: set[Any] = set()

STREAM_CLOSED_REASON = "stream closed"

Begin = Callable[[], tuple[RunClaim, Run, Callable[[], Awaitable[RunResult]]]]
Subscribe = Callable[[Callable[[AgentEvent], Any]], Callable[[], None]]


def spawn_detached(fn: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
    """Start ``fn(*args)`` as a task of the running event loop, outside any
    task group, with a copy of the caller's context variables. ``fn`` must
    not raise (anything but cancellation)."""
    if sniffio.current_async_library() == "trio":
        import trio

        trio.lowlevel.spawn_system_task(fn, *args, context=contextvars.copy_context())
        return
    import asyncio

    task: asyncio.Task[None] = asyncio.get_running_loop().create_task(fn(*args))
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


class _RunPipe:
    """What the run's task shares with its stream. The task holds this, never
    the ``RunStream`` itself, so dropping the stream really drops it."""

    __slots__ = ("done", "error", "finished", "raise_at_end", "result", "send", "unsubscribe")

    def __init__(self, send: MemoryObjectSendStream[AgentEvent]) -> None:
        self.send = send
        self.done = anyio.Event()
        self.finished = False
        self.result: RunResult | None = None
        self.error: BaseException | None = None
        self.raise_at_end: BaseException | None = None
        self.unsubscribe: Callable[[], None] | None = None

    async def drive(self, run: Run, execute: Callable[[], Awaitable[RunResult]]) -> None:
        try:
            self.result = await execute()
        except PrismError as error:
            self.error = error
            if not run.progress.started:  # no run_started, so no error event told the consumer
                self.raise_at_end = error
        except Exception as error:
            self.error = error
            self.raise_at_end = error
        finally:
            self.finished = True
            if self.unsubscribe is not None:
                self.unsubscribe()
            self.send.close()
            self.done.set()


class RunStream:
    """The events of one run, in order, ending after ``run_finished`` or
    ``error``. Use it as ``async for event in session.stream(...)`` or, to
    control exactly when the run ends, ``async with session.stream(...) as
    events:``. ``result`` is the run's ``RunResult`` once it finished,
    ``error`` its failure.

    The run starts at the first iteration (or ``async with``), which raises
    ``SessionBusyError``/``ConfigError`` for a busy session or bad input. A
    run that fails ends the iteration after its ``error`` event without
    raising; a failure before the run started (loading the session) or a
    non-Prism exception is raised at the end of the iteration.
    """

    def __init__(
        self, begin: Begin, subscribe: Subscribe, release: Callable[[RunClaim], None]
    ) -> None:
        self._begin = begin
        self._subscribe = subscribe
        self._release = release
        self._claim: RunClaim | None = None
        self._pipe: _RunPipe | None = None
        self._receive: MemoryObjectReceiveStream[AgentEvent] | None = None
        self._closed = False

    # --- results --------------------------------------------------------------------

    @property
    def result(self) -> RunResult | None:
        """The run's result once it finished successfully, else None."""
        return self._pipe.result if self._pipe is not None else None

    @property
    def error(self) -> BaseException | None:
        """The run's failure (``RunAbortedError``, ``ProviderError``, ...), if it failed."""
        return self._pipe.error if self._pipe is not None else None

    @property
    def finished(self) -> bool:
        """True once the run has ended (finished, failed or aborted)."""
        return self._pipe is not None and self._pipe.finished

    # --- starting -------------------------------------------------------------------

    def _start(self) -> None:
        if self._claim is not None or self._closed:
            return
        claim, run, execute = self._begin()  # busy session / bad input raise here
        send, self._receive = anyio.create_memory_object_stream[AgentEvent](math.inf)
        pipe = self._pipe = _RunPipe(send)
        run_id = claim.run_id

        def forward(event: AgentEvent) -> None:
            # Only this run's events (a run left behind by a dropped stream
            # may still report its abort while the next run streams).
            if not pipe.finished and event.get("runId", run_id) == run_id:
                send.send_nowait(event)

        pipe.unsubscribe = self._subscribe(forward)
        self._claim = claim
        spawn_detached(pipe.drive, run, execute)

    # --- iteration ------------------------------------------------------------------

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> AgentEvent:
        self._start()
        if self._receive is None or self._pipe is None:
            raise StopAsyncIteration
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            pending, self._pipe.raise_at_end = self._pipe.raise_at_end, None
            if pending is not None:
                raise pending from None
            raise StopAsyncIteration from None

    async def __aenter__(self) -> RunStream:
        self._start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Abort the run if it is still going and wait until it has ended."""
        self._closed = True
        claim, pipe = self._claim, self._pipe
        if claim is not None and pipe is not None and not pipe.finished:
            claim.abort(STREAM_CLOSED_REASON)
            with anyio.CancelScope(shield=True):
                await pipe.done.wait()
        if self._receive is not None:
            self._receive.close()

    def __del__(self) -> None:
        # Dropped without aclose (a plain ``break`` or an exception in the
        # loop body): abort and free the session now; the run's task winds
        # down on its own and its late release is a no-op.
        claim, pipe = self._claim, self._pipe
        if claim is None or pipe is None or pipe.finished:
            return
        try:
            if pipe.unsubscribe is not None:
                pipe.unsubscribe()  # nobody reads this run's events any more
            if self._receive is not None:
                self._receive.close()
            claim.abort(STREAM_CLOSED_REASON)
            self._release(claim)
        except Exception:  # pragma: no cover - the event loop is already gone
            pass
