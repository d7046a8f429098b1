"""examples/workspaces.py runs as docs/workspaces.md shows it."""

from __future__ import annotations

from example_runner import run_example


def test_workspaces_example_runs() -> None:
    out = run_example("workspaces.py").stdout
    assert "created fix-login: open, branch agent/fix-login" in out
    assert "worktree: worktrees/fix-login/app" in out
    assert "another tenant: ERR_PRISM_WORKSPACE_OWNERSHIP" in out
    assert "cleanup refused: ERR_PRISM_WORKSPACE_DIRTY" in out
    assert "after cleanup: closed; worktree exists: False" in out
    assert "branch kept: fix login" in out
    assert "fencing tokens: worker-1 1, worker-2 2" in out
    assert "worker-1 fenced: ERR_PRISM_WORKSPACE_FENCE" in out
    assert "checkpoint version 2: {'step': 2}" in out
