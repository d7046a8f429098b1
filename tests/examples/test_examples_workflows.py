"""examples/workflow_coding_loop.py runs as docs/workflows.md shows: the
coding loop as a durable workflow, with a refine round and a compaction at
each task boundary."""

from __future__ import annotations

from example_runner import run_example


def test_workflow_coding_loop_runs() -> None:
    out = run_example("workflow_coding_loop.py").stdout
    assert "status: completed" in out
    assert "tasks done: ['Fix add in calc.py.', 'Add mul(a, b) with a test.']" in out
    assert (
        "steps: execute -> check -> gate(refine) -> execute -> check -> gate(pass) -> compact"
        " -> next_task(more) -> execute -> check -> gate(pass) -> compact -> next_task(done)"
    ) in out
    assert "The tests failed: failed: ['test_add']" in out
    assert "compactions of the coder session: 2" in out
    assert "calc.py: return a + b" in out
