"""The autonomous coding loop as a durable workflow, with the mock provider.

Per task: one agent run (``execute``), then a check (the real test suite,
``check``), then a gate: passed -> compact the session at the task boundary;
failed -> refine (back to ``execute`` with the failure, at most twice per
task). After the compaction, the next task or the end. Every step boundary
is recorded in a JSONL store, so a process killed anywhere resumes with
``resume_workflow`` at that step (docs/workflows.md).

No network: the provider's turns are scripted; the files and pytest are real.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from prism import create_mock_provider
from prism.coding import create_coding_tools
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR, allow_kinds, create_execution_policy
from prism.stores import create_jsonl_session_store
from prism.workflows import END, Route, StepContext, Workflow, loop, run_workflow


class Progress(BaseModel):
    tasks: list[str]
    index: int = 0
    feedback: str = ""  # the failed check's output, for a refine attempt
    done: list[str] = []


class Attempt(BaseModel):
    progress: Progress
    answer: str


class Checked(BaseModel):
    progress: Progress
    passed: bool
    report: str


RUN_TESTS = """
import test_calc
failed = []
for name in sorted(n for n in dir(test_calc) if n.startswith("test_")):
    try:
        getattr(test_calc, name)()
    except AssertionError:
        failed.append(name)
print(f"failed: {failed}" if failed else "all tests passed")
raise SystemExit(1 if failed else 0)
"""


def read(call_id: str, path: str) -> Any:
    return provider_tool_call(call_id, "read", {"path": path})


def edit(call_id: str, path: str, old: str, new: str) -> Any:
    return provider_tool_call(call_id, "edit", {"path": path, "old_string": old, "new_string": new})


TURNS = [
    # task 1, first attempt: a wrong fix
    [read("r1", "calc.py"), edit("e1", "calc.py", "a - b", "a * b"), provider_done()],
    [provider_text_delta("add now multiplies."), provider_done()],
    # task 1, refine: the check's failure was in the prompt
    [edit("e2", "calc.py", "a * b", "a + b"), provider_done()],
    [provider_text_delta("add now adds."), provider_done()],
    # task 2
    [
        read("r2", "test_calc.py"),
        edit(
            "e3",
            "calc.py",
            "    return a + b\n",
            "    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
        ),
        edit("e4", "test_calc.py", "from calc import add", "from calc import add, mul"),
        provider_done(),
    ],
    [
        edit(
            "e5", "test_calc.py", "== 5\n", "== 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
        ),
        provider_done(),
    ],
    [provider_text_delta("mul is in, with a test."), provider_done()],
]


def scratch_project(root: Path) -> Path:
    project = root / "calc"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    return project


def coding_loop(project: Path, store: Any) -> Workflow:
    # No secrets here; a host passes create_redactor(secrets), built from the
    # secrets it gives create_agent, to the policy and the tools.
    policy = create_execution_policy(
        [project], [allow_kinds("edit", paths=["*.py"])], redactor=NOOP_REDACTOR
    )
    agent = create_agent(
        model={"provider": "mock", "model": "coder"},
        provider=create_mock_provider(TURNS),
        tools=create_coding_tools(project, execution_policy=policy, redactor=NOOP_REDACTOR),
        store=store,
        compaction={"keepRecentEntries": 2},
    )
    coder = agent.create_session("coder")
    flow = Workflow("coding-loop")

    @flow.agent(next="check")
    async def execute(ctx: StepContext, progress: Progress) -> Attempt:
        task = progress.tasks[progress.index]
        prompt = f"{task}\n\nThe tests failed:\n{progress.feedback}" if progress.feedback else task
        result = await ctx.run_agent(coder, prompt)
        return Attempt(progress=progress, answer=result.text)

    @flow.check(next="gate")
    def check(attempt: Attempt) -> Checked:
        # The project's tests in a fresh interpreter (a tiny runner instead of
        # pytest keeps the example quick; a real host runs its own suite).
        tests = subprocess.run(
            [sys.executable, "-c", RUN_TESTS], cwd=project, capture_output=True, text=True
        )
        report = (tests.stdout + tests.stderr).strip().splitlines()[-1]
        return Checked(progress=attempt.progress, passed=tests.returncode == 0, report=report)

    @flow.gate(routes={"pass": "compact", "refine": loop(execute, max=2, then="compact")})
    def gate(checked: Checked) -> Route:
        progress = checked.progress
        if checked.passed:
            task = progress.tasks[progress.index]
            return Route(
                "pass", progress.model_copy(update={"feedback": "", "done": [*progress.done, task]})
            )
        return Route("refine", progress.model_copy(update={"feedback": checked.report}))

    @flow.compaction(next="next_task")
    async def compact(ctx: StepContext, progress: Progress) -> Progress:
        await ctx.compact(coder)  # the task boundary: one run per task, then compact
        return progress.model_copy(update={"index": progress.index + 1, "feedback": ""})

    @flow.gate(routes={"more": loop(execute, max=20), "done": END})
    def next_task(progress: Progress) -> str:
        return "more" if progress.index < len(progress.tasks) else "done"

    return flow


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = scratch_project(Path(tmp))
        store = create_jsonl_session_store(Path(tmp) / "sessions.jsonl")
        flow = coding_loop(project, store)
        tasks = ["Fix add in calc.py.", "Add mul(a, b) with a test."]
        result = await run_workflow(flow, Progress(tasks=tasks), store=store, workflow_id="loop-1")
        print("status:", result.status)
        print("tasks done:", result.output.done)
        path = []
        for entry in await store.list("loop-1"):
            record = entry["data"]
            if record["t"] == "done":
                path.append(record["step"] + (f"({record['label']})" if "label" in record else ""))
        print("steps:", " -> ".join(path))
        coder_entries = await store.list("coder")
        prompts = [
            e["message"]["content"][0]["text"].replace("\n", " ")
            for e in coder_entries
            if e["kind"] == "message" and e["message"]["role"] == "user"
        ]
        print("prompts:", prompts)
        kinds = [e["kind"] for e in coder_entries]
        print("compactions of the coder session:", kinds.count("compaction"))
        print("calc.py:", (project / "calc.py").read_text().splitlines()[1].strip())


if __name__ == "__main__":
    anyio.run(main)
