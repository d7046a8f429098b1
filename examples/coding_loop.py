"""An autonomous coding loop on a scratch git repository, with the mock provider.

Two tasks, one ``run()`` each: the model reads, plans, edits, runs the
configured test check, commits, and the host compacts at the task
boundary with the coding compaction strategy. The execution policy allows
edits inside the repository and exactly the commands the loop needs; an
in-process approver answers the one command it did not pre-approve.

No network: the provider's turns are scripted; the files, git and pytest are real.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from prism import create_mock_provider
from prism.coding import CheckCommand, create_coding_compaction_strategy, create_coding_tools
from prism.compaction import CompactionOptions
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent
from prism.security import (
    NOOP_REDACTOR,
    ExecutionAction,
    ExecutionDecision,
    allow_command,
    allow_kinds,
    create_execution_policy,
)

GIT_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "GIT_AUTHOR_NAME": "Coding Loop",
    "GIT_AUTHOR_EMAIL": "loop@example.invalid",
    "GIT_COMMITTER_NAME": "Coding Loop",
    "GIT_COMMITTER_EMAIL": "loop@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def scratch_repo(root: Path) -> Path:
    repo = root / "calc"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *argv], cwd=repo, env=GIT_ENV, check=True)
    return repo


def call(call_id: str, tool: str, **arguments: Any) -> Any:
    return provider_tool_call(call_id, tool, arguments)


def turns() -> list[list[Any]]:
    todo = [
        {"content": "fix add", "status": "in_progress"},
        {"content": "add mul", "status": "pending"},
    ]
    done_one = [
        {"content": "fix add", "status": "completed"},
        {"content": "add mul", "status": "in_progress"},
    ]
    return [
        # task 1: fix add
        [
            call("t1", "todo", todos=todo, next_check="tests"),
            call("r1", "read", path="calc.py"),
            provider_done(),
        ],
        [
            call("e1", "edit", path="calc.py", old_string="a - b", new_string="a + b"),
            provider_done(),
        ],
        [call("k1", "check", name="tests"), provider_done()],
        [call("g1", "git", op="add", paths=["calc.py"]), provider_done()],
        [call("g2", "git", op="commit", message="Fix add"), provider_done()],
        [provider_text_delta("add is fixed and committed."), provider_done()],
        # task 2: add mul with a test
        [
            call("t2", "todo", todos=done_one),
            call("r2", "read", path="test_calc.py"),
            provider_done(),
        ],
        [
            call(
                "e2",
                "edit",
                path="calc.py",
                old_string="    return a + b\n",
                new_string="    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
            ),
            call(
                "e3",
                "edit",
                path="test_calc.py",
                edits=[
                    {
                        "old_string": "from calc import add",
                        "new_string": "from calc import add, mul",
                    },
                    {
                        "old_string": "== 5\n",
                        "new_string": "== 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
                    },
                ],
            ),
            provider_done(),
        ],
        [call("k2", "check", name="tests"), provider_done()],
        [call("g3", "git", op="add", paths=["calc.py", "test_calc.py"]), provider_done()],
        [call("g4", "git", op="commit", message="Add mul"), provider_done()],
        [call("s1", "shell", command="git log --oneline"), provider_done()],
        [provider_text_delta("mul is in, tested and committed."), provider_done()],
    ]


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = scratch_repo(Path(tmp))
        asked: list[str] = []

        async def approve(action: ExecutionAction, reason: str) -> ExecutionDecision:
            # A CLI would prompt here; this host approves read-only git commands.
            asked.append(" ".join(action.argv))
            if action.argv[:2] == ("git", "log"):
                return ExecutionDecision.allow("read-only git")
            return ExecutionDecision.deny("not approved by the host")

        policy = create_execution_policy(
            [repo],
            [
                allow_kinds("write", "edit", paths=["*.py"]),
                allow_command("git", "-c", "core.quotepath=off", "--no-pager", "..."),
                allow_command(sys.executable, "-m", "pytest", "..."),
            ],
            approve=approve,
            # No secrets here; a host passes create_redactor(secrets), built from
            # the same secrets it gives create_agent.
            redactor=NOOP_REDACTOR,
        )
        events: list[dict[str, Any]] = []
        tools = create_coding_tools(
            repo,
            execution_policy=policy,
            env=GIT_ENV,
            on_event=events.append,
            checks={
                "tests": CheckCommand(
                    (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
                )
            },
            redactor=NOOP_REDACTOR,
        )
        agent = create_agent(
            model={"provider": "mock", "model": "coder"},
            provider=create_mock_provider(turns()),
            tools=tools,
            compaction=CompactionOptions(
                strategy=create_coding_compaction_strategy(state=tools.state), keep_recent_entries=2
            ),
        )
        session = agent.create_session("coding-loop")
        for task in ("Fix add in calc.py.", "Add mul(a, b) with a test."):
            result = await session.run(task)
            print(f"task: {task!r} -> {result.text}")
            entry = await session.compact()  # the task boundary
            newest = entry["summary"].rsplit("Coding state:", 1)[-1]
            print("  compacted; coding state:", "; ".join(newest.strip().splitlines()[:3]))
        print("files changed:", sorted({e["path"] for e in events if e["type"] == "file_changed"}))
        checks = [
            e for e in events if e["type"] == "command_finished" and "pytest" in " ".join(e["argv"])
        ]
        print("test runs:", [e["exitCode"] for e in checks])
        print("approver asked:", asked)
        log = subprocess.run(
            ["git", "log", "--format=%s"],
            cwd=repo,
            env=GIT_ENV,
            capture_output=True,
            text=True,
            check=True,
        )
        print("git log:", log.stdout.split())


if __name__ == "__main__":
    anyio.run(main)
