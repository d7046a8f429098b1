"""Workflows that run in the background: ``start_workflow_background`` and
the ``WorkflowHandle`` to await, cancel and query, plus ``workflow_status``
that reads any workflow's state from its store."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import sniffio

from prism.stores import SessionStore
from prism.workflows.engine import WorkflowResult, resume_workflow, run_workflow
from prism.workflows.errors import WorkflowError
from prism.workflows.graph import Workflow
from prism.workflows.log import replay

__all__ = ["WorkflowHandle", "WorkflowStatus", "start_workflow_background", "workflow_status"]

# Strong references to running asyncio tasks (the loop keeps only weak ones).
_BACKGROUND: set[Any] = set()

State = Literal["not_started", "running", "paused", "completed", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class WorkflowStatus:
    """A workflow's state as its store records it. ``running`` means
    started and not finished: running now, or its process died (then
    ``resume_workflow`` continues it). ``step`` is the step it is at (or
    ended at), ``steps_done`` how many steps finished."""

    workflow_id: str
    state: State
    step: str | None = None
    steps_done: int = 0
    pending_approvals: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None


async def workflow_status(store: SessionStore, workflow_id: str) -> WorkflowStatus:
    """Read ``workflow_id``'s state from ``store`` (no lease taken)."""
    state = replay(await store.list(workflow_id))
    if state.start is None:
        return WorkflowStatus(workflow_id, "not_started")
    if state.end is not None:
        status = state.end.get("status")
        step = state.end.get("step") or (state.visited[-1] if state.visited else None)
        if status == "completed":
            return WorkflowStatus(workflow_id, "completed", step, state.done)
        return WorkflowStatus(workflow_id, "failed", step, state.done, error=state.end.get("error"))
    if state.cancelled:
        return WorkflowStatus(workflow_id, "cancelled", state.step, state.done)
    if state.paused is not None:
        pending = [a for a in state.paused.get("approvals", []) if a["id"] not in state.decided]
        return WorkflowStatus(workflow_id, "paused", state.step, state.done, pending)
    return WorkflowStatus(workflow_id, "running", state.step, state.done)


class WorkflowHandle:
    """A workflow running in a background task of this event loop."""

    def __init__(self, store: SessionStore, workflow_id: str) -> None:
        self.store = store
        self.workflow_id = workflow_id
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()
        self._result: WorkflowResult | None = None
        self._error: BaseException | None = None
        self._cancelled = False

    @property
    def done(self) -> bool:
        return self._done.is_set()

    async def result(self) -> WorkflowResult:
        """Wait for the workflow to complete or pause; re-raises its error,
        or ``WorkflowError`` (code ``workflow_cancelled``) after ``cancel()``."""
        await self._done.wait()
        if self._cancelled:
            raise WorkflowError(
                f"workflow {self.workflow_id!r} was cancelled", code="workflow_cancelled"
            )
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def cancel(self) -> None:
        """Stop the workflow at its next await. The step that was running is
        left as a crash leaves it (``resume_workflow`` can continue)."""
        self._cancelled = True
        self._scope.cancel()

    async def status(self) -> WorkflowStatus:
        """The stored state (``cancelled`` once the cancellation is recorded)."""
        return await workflow_status(self.store, self.workflow_id)

    async def _drive(self, start: Callable[[], Awaitable[WorkflowResult]]) -> None:
        try:
            with self._scope:
                self._result = await start()
        except Exception as error:
            self._error = error
        finally:
            self._done.set()


def start_workflow_background(
    workflow: Workflow,
    input: Any = None,
    *,
    store: SessionStore,
    workflow_id: str,
    resume: bool = False,
    decisions: Any = None,
) -> WorkflowHandle:
    """Start ``run_workflow`` (or ``resume_workflow`` with ``resume=True``)
    as a task of the running event loop and return its handle at once."""
    workflow.validate()
    handle = WorkflowHandle(store, workflow_id)

    def start() -> Awaitable[WorkflowResult]:
        if resume:
            return resume_workflow(
                workflow, store=store, workflow_id=workflow_id, decisions=decisions
            )
        return run_workflow(workflow, input, store=store, workflow_id=workflow_id)

    _spawn(handle._drive, start)
    return handle


def _spawn(fn: Callable[..., Awaitable[None]], *args: Any) -> None:
    if sniffio.current_async_library() == "trio":
        import trio

        trio.lowlevel.spawn_system_task(fn, *args, context=contextvars.copy_context())
        return
    import asyncio

    task: asyncio.Task[None] = asyncio.get_running_loop().create_task(fn(*args))  # type: ignore[arg-type]
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)
