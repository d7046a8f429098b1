"""The loop's steps, run plainly: the runner a durable layer replaces.

The loop (``prism.runtime.loop``) decides *what* happens in a run; a
``Steps`` object decides *how* each step is carried out:

* ``recorded``: a provider turn or a compaction (plain: just run it),
* ``sleep``: a retry's wait,
* ``record``: appending the messages of a step boundary (``"input"``,
  ``"turn"``, ``"end"``),
* ``tool_round``: running an assistant turn's tool calls and storing the
  turn with their results,
* ``finish`` / ``fail``: the run ended, or ended in an error or abort.

Plain runs use this class as is. ``prism.runtime.durable_steps`` subclasses
it to write checkpoints at every boundary (``durable=True``) and to run the
steps through a replaying engine's journal (``prism.durable``), so durable
and plain runs are one loop with a different step runner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

from prism.assembly.groups import tool_result_message
from prism.contracts import Message, SessionEntry, ToolCall, ToolResult
from prism.runtime.calibrate import calibration_entries, calibration_stored
from prism.runtime.context import Run, RunPort, RunProgress, RunSettings
from prism.runtime.turn import attention_checkpoint, attention_checkpoint_stored
from prism.tools.content import elide_image_data
from prism.tools.context import ToolEventSink
from prism.tools.definition import ToolContext
from prism.tools.dispatch import ExecuteCall, run_tool_calls

__all__ = ["Steps", "error_result", "message_entry"]

T = TypeVar("T")
OnStart = Callable[[int, ToolCall], Any]
OnResult = Callable[[int, ToolResult], Any]


def message_entry(port: RunPort, message: Message, entry_id: str | None = None) -> SessionEntry:
    return {
        "id": entry_id or port.new_entry_id(),
        "sessionId": port.session_id,
        "parentId": None,  # chained under the leaf at append time
        "kind": "message",
        "message": message,
    }


def error_result(call: ToolCall, message: str, code: str) -> ToolResult:
    return {
        "toolCallId": call["id"],
        "name": call["name"],
        "value": {"message": message, "code": code},
        "isError": True,
    }


class Steps:
    """Runs each step of the loop as it is (no checkpoints, no journal)."""

    durable = False
    """Whether this runner checkpoints (``RunResult`` and resume read it)."""

    __slots__ = ("port", "progress", "settings")

    def __init__(self, settings: RunSettings, port: RunPort, progress: RunProgress) -> None:
        self.settings = settings
        self.port = port
        self.progress = progress

    async def begin(self, run: Run, load: Callable[[], Awaitable[list[SessionEntry]]]) -> None:
        """Called once the session is loaded, before the run's first append
        (a journal puts a replayed run back where it began)."""

    # --- steps a replaying engine records ---------------------------------------------

    async def recorded(
        self,
        name: str,
        body: Callable[[], Awaitable[T]],
        to_record: Callable[[T], Any],
        from_record: Callable[[Any], T],
    ) -> T:
        """Run ``body`` (a provider turn, a compaction). A journaled runner
        records its result (``to_record``) and returns the recorded one
        (``from_record``) on replay instead of running it."""
        return await body()

    async def sleep(self, seconds: float) -> None:
        await self.settings.config.sleep(seconds)

    # --- appends ------------------------------------------------------------------------

    async def append(self, entries: list[SessionEntry]) -> list[SessionEntry]:
        """Append through the session's port (a journal skips what is stored)."""
        return await self.port.append(entries)

    def boundary_entries(self, boundary: str, entries: list[SessionEntry]) -> list[SessionEntry]:
        """What rides after a step's own entries in its batch (a durable
        runner's checkpoint); nothing for a plain run."""
        return []

    @property
    def carries_session_state(self) -> bool:
        """Whether the boundary entries carry the attention frontier (then
        no separate frontier checkpoint is written)."""
        return False

    async def record(
        self, messages: Sequence[Message], boundary: str, first_id: str | None = None
    ) -> list[Message]:
        """Append ``messages`` at a step boundary in one write; returns the
        stored (redacted when secrets are set) copies, which the run's result
        reports."""
        port = self.port
        entries = [
            message_entry(port, m, first_id if i == 0 else None) for i, m in enumerate(messages)
        ]
        # An opt-in attention frontier checkpoint rides in the same batch,
        # ahead of the turn it shaped, so the leaf stays a message; a durable
        # runner's checkpoint rides last (a batch torn by a crash mid-write
        # then never holds a checkpoint that claims entries the file lost).
        frontier: list[SessionEntry] = []
        if not self.carries_session_state:
            frontier = attention_checkpoint(self.settings, port)
        # A plain run's calibration record rides here too; a durable run's
        # rides in its checkpoint (boundary_entries).
        calibration = [] if self.durable else calibration_entries(port, self.progress.calibration)
        stored = await self.append(
            [*frontier, *calibration, *entries, *self.boundary_entries(boundary, entries)]
        )
        attention_checkpoint_stored(port, frontier)
        if calibration:
            record = self.progress.calibration
            assert record is not None
            calibration_stored(port.attention_state, calibration[0]["id"], record)
            self.progress.calibration = None
        kept = [entry["message"] for entry in stored if entry["kind"] == "message"]
        self.progress.messages.extend(kept)
        return kept

    # --- tools --------------------------------------------------------------------------

    async def tool_round(
        self,
        message: Message,
        message_id: str,
        results: list[ToolResult | None],
        runnable: list[tuple[int, ToolCall]],
    ) -> Message:
        """Run the ``runnable`` calls of an assistant turn and store the turn
        with every result (``results`` holds the ones already known) in one
        write, so no abort leaves a call without its result in the store.
        Returns the stored assistant message."""
        if runnable:
            dispatched = await self.dispatch([call for _, call in runnable])
            for (index, _), result in zip(runnable, dispatched, strict=True):
                results[index] = result
        finished = [tool_result_message(r) for r in results if r is not None]
        stored = await self.record([message, *finished], "turn", first_id=message_id)
        return stored[0]

    def execute_call(self) -> ExecuteCall | None:
        """How each tool call's dispatch is run (a journal records it)."""
        return None

    @property
    def tool_concurrency(self) -> int:
        return self.settings.config.tool_concurrency

    async def dispatch(
        self,
        calls: list[ToolCall],
        on_start: OnStart | None = None,
        on_result: OnResult | None = None,
    ) -> list[ToolResult]:
        """Run ``calls`` with their ``tool_call``/``tool_result`` events;
        ``on_start``/``on_result`` (async) run after each event."""
        config = self.settings.config
        port = self.port

        def emit_start(_index: int, call: ToolCall) -> None:
            port.emit({"type": "tool_call", "toolCall": call})

        def emit_result(_index: int, result: ToolResult) -> None:
            port.emit({"type": "tool_result", "result": elide_image_data(result)})

        started: OnStart = emit_start
        finished: OnResult = emit_result
        if on_start is not None and on_result is not None:
            # Plain runs keep the synchronous callbacks (no coroutine per call).
            async def start_then(index: int, call: ToolCall) -> None:
                emit_start(index, call)
                await on_start(index, call)

            async def result_then(index: int, result: ToolResult) -> None:
                emit_result(index, result)
                await on_result(index, result)

            started, finished = start_then, result_then

        return await run_tool_calls(
            calls,
            registry=config.tools,
            context=ToolContext(
                session_id=port.session_id,
                run_id=port.run_id,
                metadata=self.settings.metadata,
                # A tool's lifecycle events join the run's stream (redacted,
                # stamped, in order between its tool_call and tool_result).
                event_sink=cast(ToolEventSink, port.emit),
                store=port.store,
            ),
            concurrency=self.tool_concurrency,
            middleware=config.middleware,
            permission_policy=config.permission_policy,
            redactor=config.redactor,
            on_start=started,
            on_result=finished,
            execute_call=self.execute_call(),
        )

    # --- the run's end ------------------------------------------------------------------

    async def finish(self) -> None:
        """The run completed (its last answer is stored)."""

    async def fail(self, aborted: bool) -> None:
        """The run failed or was aborted; called inside the run's claim and
        lease, before the session is released."""
