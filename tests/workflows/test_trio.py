"""The background handle and a durable run work under trio too (anyio
everywhere): the handle's task is a trio system task."""

from __future__ import annotations

from pathlib import Path

import pytest

from prism.stores import create_jsonl_session_store
from prism.workflows import END, Workflow, start_workflow_background, workflow_status


@pytest.fixture
def anyio_backend() -> str:
    return "trio"


@pytest.mark.anyio
async def test_a_background_workflow_under_trio(tmp_path: Path) -> None:
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    flow = Workflow("trio")

    @flow.step(next="twice", idempotent=True)
    def once(x: int) -> int:
        return x + 1

    @flow.step(next=END)
    def twice(x: int) -> int:
        return x * 2

    handle = start_workflow_background(flow, 1, store=store, workflow_id="w")
    assert (await handle.result()).output == 4
    assert (await workflow_status(store, "w")).steps_done == 2
