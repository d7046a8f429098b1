"""Recovering a dead DBOS executor's pending workflows, shared by Prism runs
(``prism.durable.dbos``) and Prism workflows (``prism.workflows.dbos``).
Importing it registers no DBOS workflow, so each side loads only its own."""

from __future__ import annotations

from dbos import DBOS

from prism.errors import ConfigError

__all__ = ["resume_pending"]


async def resume_pending(name: str, executor_id: str) -> list[str]:
    """Enqueue again every pending DBOS workflow called ``name`` that the
    executor ``executor_id`` left behind; returns their ids. Prism runs and
    Prism workflows recover the same way (``prism.durable.dbos.recover_runs``,
    ``prism.workflows.dbos.recover_workflows``)."""
    if not isinstance(executor_id, str) or not executor_id:
        raise ConfigError("executor_id must be a non-empty string")
    pending = await DBOS.list_workflows_async(
        status="PENDING",
        name=name,
        executor_id=executor_id,
        load_input=False,
        load_output=False,
    )
    ids = [status.workflow_id for status in pending]
    for workflow_id in ids:
        await DBOS.resume_workflow_async(workflow_id)
    return ids
