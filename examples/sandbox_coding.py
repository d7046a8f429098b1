"""The coding tools on a sandbox: the same read/edit/search/shell/git tools,
every file and command inside a bubblewrap sandbox, driven by the mock
provider in an agent session.

Needs Linux with bubblewrap and git; see docs/sandboxes.md ("Coding tools
on a sandbox"). ``create_docker_sandbox`` works the same way (its image has
no git).
"""

from __future__ import annotations

import os
from typing import Any

import anyio

from prism import create_mock_provider
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent
from prism.sandbox import create_native_sandbox
from prism.sandbox.coding import create_sandbox_coding_tools
from prism.security import NOOP_REDACTOR, allow_command, allow_kinds, create_execution_policy

ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "GIT_AUTHOR_NAME": "Sandbox Coder",
    "GIT_AUTHOR_EMAIL": "coder@example.invalid",
    "GIT_COMMITTER_NAME": "Sandbox Coder",
    "GIT_COMMITTER_EMAIL": "coder@example.invalid",
    # bubblewrap's /workspace belongs to root; commands run as another uid
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": "/workspace",
}


def call(call_id: str, tool: str, **arguments: Any) -> Any:
    return provider_tool_call(call_id, tool, arguments)


TURNS = [
    [call("w", "write", path="calc.py", content="def add(a, b):\n    return a - b\n")],
    [call("e", "edit", path="calc.py", old_string="a - b", new_string="a + b")],
    [call("s", "search", pattern="return", glob=["*.py"])],
    [call("x", "shell", argv=["python3", "-c", "import calc; print(calc.add(2, 3))"])],
    [call("a", "git", op="add", paths=["calc.py"]), call("c", "git", op="commit", message="add")],
    [call("escape", "read", path="/etc/passwd")],
    [provider_text_delta("add() works and is committed."), provider_done()],
]


async def main() -> None:
    async with await create_native_sandbox(env=ENV) as sandbox:
        await sandbox.exec("git init -q -b main", env=ENV)
        tools = create_sandbox_coding_tools(
            sandbox,
            execution_policy=lambda root: create_execution_policy(
                [root],
                [
                    allow_kinds("write", "edit", paths=["*.py"]),
                    allow_command("python3", "..."),
                    allow_command("git", "..."),
                ],
                redactor=NOOP_REDACTOR,
            ),
            env=ENV,
            redactor=NOOP_REDACTOR,
        )
        print("capabilities:", tools.capabilities.backend, tools.capabilities.filesystem_isolated)
        agent = create_agent(
            model={"provider": "mock", "model": "coder"},
            provider=create_mock_provider(TURNS),
            tools=tools,
        )
        session = agent.create_session("sandbox-coding")
        result = await session.run("Fix add() in calc.py and commit it.")
        for message in await session.messages():
            for part in message["content"] if message["role"] == "tool" else []:
                outcome = "refused" if part.get("isError") else "ok"
                print(f"{part['toolCallId']}: {outcome}")  # type: ignore[typeddict-item]
        print("final:", result.text)
        log = await sandbox.exec("git log --format=%s", env=ENV)
        print("git log in the sandbox:", log.stdout_text.split())
        print("host view stays empty:", os.listdir(tools.view) == [])


if __name__ == "__main__":
    anyio.run(main)
