"""The coding tools, the execution policy, the sandbox coding tools and the
inspector take the agent's redactor as a required argument: a bare list of
secrets or ``None`` is refused up front with a TypeError naming the
function, before anything is created (no workspace, no temp view, no socket)."""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from prism.coding import create_coding_tools, create_coding_workspace
from prism.inspect import export_html, render_report, serve_inspector
from prism.inspect.app import InspectorApp
from prism.sandbox.coding import create_sandbox_coding_tools
from prism.security import (
    NOOP_REDACTOR,
    ExecutionAction,
    authorize,
    create_execution_policy,
)

SECRET = "sk-live-0123456789"
BAD = [None, [SECRET], SECRET]


def calls(root: Path) -> dict[str, Callable[[Any], Any]]:
    policy = create_execution_policy([root], redactor=NOOP_REDACTOR)
    action = ExecutionAction("read", paths=("a.txt",))
    # Validation comes before the source or sandbox is used, so stand-ins do.
    source: Any = object()
    return {
        "create_coding_tools": lambda r: create_coding_tools(root, redactor=r),
        "create_coding_workspace": lambda r: create_coding_workspace(root, redactor=r),
        "create_execution_policy": lambda r: create_execution_policy([root], redactor=r),
        "authorize": lambda r: authorize(policy, action, redactor=r),
        "create_sandbox_coding_tools": lambda r: create_sandbox_coding_tools(source, redactor=r),
        "InspectorApp": lambda r: InspectorApp(source, redactor=r),
        "render_report": lambda r: render_report(source, "s", redactor=r),
        "export_html": lambda r: export_html(source, "s", str(root / "r.html"), redactor=r),
        "serve_inspector": lambda r: serve_inspector(str(root / "none.jsonl"), redactor=r),
    }


@pytest.mark.parametrize("bad", BAD, ids=["none", "list", "str"])
@pytest.mark.parametrize("name", sorted(calls(Path("/")).keys()))
def test_refuses_anything_but_a_redactor(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    bad: object,
) -> None:
    # A temp dir of this test's own: sandbox tests on another pytest-xdist
    # worker create and remove views in the shared one while this one runs.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("tempdir")))
    views_before = set(Path(tempfile.gettempdir()).glob("prism-sandbox-view-*"))
    call = calls(tmp_path)[name]

    def invoke() -> None:
        result = call(bad)
        if isinstance(result, Awaitable):

            async def wait() -> None:
                await result

            anyio.run(wait)

    with pytest.raises(TypeError, match=f"{name}: redactor must be a SecretRedactor") as caught:
        invoke()
    assert SECRET not in str(caught.value)
    assert set(Path(tempfile.gettempdir()).glob("prism-sandbox-view-*")) == views_before
    assert sorted(p.name for p in tmp_path.iterdir()) == []
