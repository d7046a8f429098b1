"""check (real pytest/ruff/mypy runs plus the tsc/cargo formats), the todo
tool and plan file, the typed lifecycle events, and coding compaction."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NotRequired, get_args, get_origin, get_type_hints

import pytest
from coding_helpers import Call, error_of, make_call

from prism.coding import (
    CheckCommand,
    CodingState,
    coding_state_lines,
    create_coding_compaction_strategy,
    create_coding_tools,
    parse_diagnostics,
)
from prism.compaction.options import CompactionContext
from prism.contracts import AgentEvent
from prism.security import NOOP_REDACTOR, allow_command, allow_kinds, create_execution_policy

pytestmark = pytest.mark.anyio
PY = sys.executable


def checked_tools(workspace: Path, events: list[dict[str, Any]], **kw: Any) -> Call:
    policy = create_execution_policy(
        [workspace],
        [allow_command(PY, "..."), allow_kinds("write", "edit")],
        redactor=NOOP_REDACTOR,
    )
    checks = {
        "tests": CheckCommand((PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"), "pytest"),
        "lint": CheckCommand(
            (PY, "-m", "ruff", "check", "--no-cache", "--output-format=concise", "."), "ruff"
        ),
        "types": CheckCommand((PY, "-m", "mypy", "--no-incremental", "bad_types.py"), "mypy"),
    }
    return make_call(
        create_coding_tools(
            workspace,
            execution_policy=policy,
            checks=checks,
            on_event=events.append,
            redactor=NOOP_REDACTOR,
            **kw,
        )
    )


async def test_checks_turn_real_output_into_diagnostics(workspace: Path) -> None:
    events: list[dict[str, Any]] = []
    (workspace / "test_math.py").write_text("def test_add():\n    assert 1 + 1 == 3\n")
    (workspace / "lint_me.py").write_text("import os\n")
    (workspace / "bad_types.py").write_text("x: int = 'no'\n")
    call = checked_tools(workspace, events)
    tests = (await call("check", name="tests"))["value"]
    assert tests["passed"] is False and tests["exit_code"] == 1
    diagnostics = tests["diagnostics"]
    assert any(d.get("test") == "test_add" and d["file"] == "test_math.py" for d in diagnostics)
    assert any(d["line"] == 2 and "AssertionError" in d["message"] for d in diagnostics)
    lint = (await call("check", name="lint"))["value"]
    found = [d for d in lint["diagnostics"] if d["file"] == "lint_me.py"]
    assert found and found[0]["code"] == "F401" and found[0]["line"] == 1
    types = (await call("check", name="types"))["value"]
    assert types["diagnostics"][0]["file"] == "bad_types.py"
    assert types["diagnostics"][0]["severity"] == "error"
    assert "tail" in types and len(types["tail"]) <= 2000
    unknown = await call("check", name="deploy")
    assert unknown["value"]["code"] == "invalid_arguments"  # the schema's enum


def test_tsc_cargo_and_generic_formats() -> None:
    tsc = "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'."
    assert parse_diagnostics(tsc, "tsc") == [
        {
            "file": "src/a.ts",
            "line": 3,
            "column": 7,
            "severity": "error",
            "code": "TS2322",
            "message": "Type 'string' is not assignable to type 'number'.",
        }
    ]
    cargo = "warning: unused variable: `x`\n --> src/lib.rs:4:9\n  |\nerror[E0308]: mismatched types\n  --> src/main.rs:10:5\n"
    found = parse_diagnostics(cargo, "auto", "cargo")
    assert [(d["file"], d["line"], d["severity"]) for d in found] == [
        ("src/lib.rs", 4, "warning"),
        ("src/main.rs", 10, "error"),
    ]
    assert found[1]["code"] == "E0308"
    assert parse_diagnostics("lib/x.py:12:3: something odd", "generic")[0]["line"] == 12
    assert parse_diagnostics("all good", "auto", "make") == []


def test_check_command_validation(workspace: Path) -> None:
    with pytest.raises(ValueError, match="non-empty sequence"):
        CheckCommand("pytest -q")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="give argv as a list"):
        create_coding_tools(workspace, checks={"tests": "pytest -q"}, redactor=NOOP_REDACTOR)  # type: ignore[dict-item]


async def test_todo_tool_plan_file_and_state(workspace: Path, events: list[Any]) -> None:
    policy = create_execution_policy([workspace], [allow_kinds("write")], redactor=NOOP_REDACTOR)
    state = CodingState()
    toolset = create_coding_tools(
        workspace,
        execution_policy=policy,
        on_event=events.append,
        plan_file=".prism/plan.md",
        state=state,
        redactor=NOOP_REDACTOR,
    )
    call = make_call(toolset)
    todos = [
        {"content": "write the parser", "status": "completed"},
        {"content": "add tests", "status": "in_progress"},
        {"content": "docs", "status": "pending"},
    ]
    result = await call("todo", todos=todos, blockers=["flaky CI"], next_check="run tests")
    assert result["value"] == "plan updated: 1/3 done, 1 in progress"
    plan = (workspace / ".prism" / "plan.md").read_text()
    assert "- [x] write the parser\n- [~] add tests\n- [ ] docs" in plan
    assert "## Blockers" in plan and "run tests" in plan
    event = events[-1]
    assert event["type"] == "plan_changed" and event["path"] == ".prism/plan.md"
    assert event["counts"] == {"pending": 1, "in_progress": 1, "completed": 1}
    saved = state.for_session("s1")
    assert saved == {"todos": todos, "blockers": ["flaky CI"], "nextCheck": "run tests"}
    restored = CodingState()
    restored.restore("s1", saved)
    assert restored.for_session("s1") == saved
    two = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    assert "at most one todo may be in_progress" in error_of(await call("todo", todos=two))
    assert state.for_session("s1") == saved  # unchanged by the refused call


def _assert_typed(event: dict[str, Any]) -> None:
    classes = {}
    for cls in get_args(AgentEvent):
        (literal,) = get_args(get_type_hints(cls)["type"])
        classes[literal] = cls
    cls = classes[event["type"]]
    hints = get_type_hints(cls, include_extras=True)
    required = {k for k, h in hints.items() if get_origin(h) is not NotRequired}
    assert set(event) <= set(hints), (event["type"], set(event) - set(hints))
    assert required <= set(event), (event["type"], required - set(event))


async def test_lifecycle_events_match_the_typed_union(
    workspace: Path, call: Call, events: list[Any]
) -> None:
    await call("write", path="new.py", content="x = 1\n")
    await call("shell", argv=["true"])
    await call("todo", todos=[{"content": "a", "status": "pending"}])
    kinds = [e["type"] for e in events]
    assert kinds == ["file_changed", "command_started", "command_finished", "plan_changed"]
    for event in events:
        _assert_typed(event)


async def test_command_events_redact_argv(workspace: Path) -> None:
    from prism.security import create_redactor

    events: list[dict[str, Any]] = []
    secret = "tok-abcdef123456"
    policy = create_execution_policy(
        [workspace], [allow_command("echo", "...")], redactor=NOOP_REDACTOR
    )
    call = make_call(
        create_coding_tools(
            workspace,
            execution_policy=policy,
            on_event=events.append,
            redactor=create_redactor([secret]),
        )
    )
    result = await call("shell", argv=["echo", f"--token={secret}"])
    assert secret not in str(events) and secret not in str(result)


async def test_coding_compaction_keeps_state_not_content(workspace: Path) -> None:
    def msg(i: int, role: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": f"e{i}",
            "parentId": f"e{i - 1}" if i else None,
            "kind": "message",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": role, "content": blocks},
        }

    big_output = "RAW-OUTPUT " * 500
    entries = [
        msg(0, "user", [{"type": "text", "text": "fix the parser"}]),
        msg(
            1,
            "assistant",
            [
                {
                    "type": "tool_call",
                    "id": "c1",
                    "name": "read",
                    "arguments": {"path": "src/parser.py"},
                },
                {
                    "type": "tool_call",
                    "id": "c2",
                    "name": "edit",
                    "arguments": {
                        "path": "src/parser.py",
                        "old_string": "SECRET-DIFF-OLD",
                        "new_string": "SECRET-DIFF-NEW",
                    },
                },
                {"type": "tool_call", "id": "c3", "name": "check", "arguments": {"name": "tests"}},
            ],
        ),
        msg(
            2,
            "tool",
            [
                {
                    "type": "tool_result",
                    "toolCallId": "c3",
                    "name": "check",
                    "result": {
                        "name": "tests",
                        "passed": False,
                        "diagnostic_count": 2,
                        "tail": big_output,
                    },
                },
            ],
        ),
    ] + [msg(i, "user", [{"type": "text", "text": f"more {i}"}]) for i in range(3, 15)]
    state = CodingState()
    state.restore(
        "s",
        {
            "todos": [{"content": "fix parser", "status": "in_progress"}],
            "blockers": ["needs fixture"],
        },
    )
    strategy = create_coding_compaction_strategy(state=state, keep_recent_entries=2)
    context = CompactionContext(
        session_id="s", entries=entries, new_entry_id=lambda: "c-1", redactor=NOOP_REDACTOR
    )  # type: ignore[arg-type]
    result = await strategy.compact(context)
    summary = result.summary
    assert "src/parser.py (edited)" in summary and "tests: failed (2 diagnostics)" in summary
    assert "todo [in_progress] fix parser" in summary and "blocker: needs fixture" in summary
    assert "next verification: re-run check 'tests'" in summary
    assert "RAW-OUTPUT" not in summary and "SECRET-DIFF" not in summary
    assert result.entries[0]["summary"] == summary
    assert coding_state_lines([], None) == []


async def test_repeated_compaction_keeps_one_state_section() -> None:
    entries: list[Any] = [
        {
            "id": "e0",
            "parentId": None,
            "kind": "message",
            "timestamp": "t",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_call",
                        "id": "c1",
                        "name": "write",
                        "arguments": {"path": "a.py", "content": "x"},
                    }
                ],
            },
        },
        {
            "id": "e1",
            "parentId": "e0",
            "kind": "compaction",
            "timestamp": "t",
            "summary": "earlier\n\nCoding state:\n- paths: old.py (wrote)",
            "data": {
                "throughEntryId": "e0",
                "keepEntryIds": [],
                "strategy": "coding",
                "trigger": "manual",
            },
        },
    ] + [
        {
            "id": f"m{i}",
            "parentId": "e1" if i == 0 else f"m{i - 1}",
            "kind": "message",
            "timestamp": "t",
            "message": {"role": "user", "content": [{"type": "text", "text": f"u{i}"}]},
        }
        for i in range(4)
    ]
    strategy = create_coding_compaction_strategy(keep_recent_entries=1)
    result = await strategy.compact(
        CompactionContext(
            session_id="s", entries=entries, new_entry_id=lambda: "n", redactor=NOOP_REDACTOR
        )
    )  # type: ignore[arg-type]
    assert result.summary.count("Coding state:") == 1
    assert "old.py" not in result.summary and "a.py (wrote)" in result.summary
