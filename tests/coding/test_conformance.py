"""Every coding tool passes the dispatch conformance matrix
(prism.testing.assert_tool_dispatch_conforms), and the helper itself fails
for a tool that runs when it should not."""

from __future__ import annotations

from pathlib import Path

import pytest

from prism.coding import CodingToolSet
from prism.security import NOOP_REDACTOR
from prism.testing import assert_tool_dispatch_conforms
from prism.tools import ToolDefinition

pytestmark = pytest.mark.anyio


async def test_coding_tools_conform(workspace: Path, tools: CodingToolSet, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    cases = {
        "read": ({"path": "src/app.py"}, {"path": 3}, {"path": str(outside)}),
        "write": (
            {"path": "n.py", "content": "x"},
            {"path": "n.py"},
            {"path": str(outside), "content": "x"},
        ),
        "edit": (
            {"path": "src/app.py", "old_string": "1", "new_string": "2"},
            {"path": "src/app.py", "old_string": 1},
            {"path": str(outside), "old_string": "a", "new_string": "b"},
        ),
        "search": ({"pattern": "x"}, {"pattern": ""}, {"pattern": "x", "path": str(tmp_path)}),
        "list": ({}, {"glob": "*.py"}, {"path": str(tmp_path)}),
        "shell": (
            {"argv": ["true"]},
            {"argv": []},
            {"argv": ["touch", str(outside)], "cwd": str(tmp_path)},
        ),
        "git": ({"op": "status"}, {"op": "explode"}, {"op": "add", "paths": [str(outside)]}),
        "todo": ({"todos": []}, {"todos": "all"}, None),
    }
    for name, (valid, invalid, denied) in cases.items():
        results = await assert_tool_dispatch_conforms(
            tools.by_name(name),
            valid_arguments=valid,
            invalid_arguments=invalid,
            policy_denied_arguments=denied,
            side_effect=outside.exists,
            redactor=NOOP_REDACTOR,
        )
        expected = {
            "unknown",
            "inactive",
            "invalid_arguments",
            "permission_denied",
            "middleware_rename",
            "middleware_arguments",
        }
        assert expected <= set(results), name
        if denied is not None:
            assert "policy_denied" in results
    assert not outside.exists()


async def test_helper_catches_a_tool_without_a_policy(tmp_path: Path) -> None:
    target = tmp_path / "x"

    def unguarded(args: dict[str, object], ctx: object) -> str:
        target.write_text("ran")
        return "ok"

    tool = ToolDefinition("unguarded", unguarded, parameters={"type": "object"})
    with pytest.raises(AssertionError, match="policy_denied: expected an error result"):
        await assert_tool_dispatch_conforms(
            tool,
            valid_arguments={},
            policy_denied_arguments={},
            side_effect=target.exists,
            redactor=NOOP_REDACTOR,
        )
