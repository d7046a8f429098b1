"""The coding tools unchanged on a sandbox (native bubblewrap and Docker):
an agent session with the mock provider drives them, every file and command
lands inside the sandbox, escapes are refused, capabilities are the sandbox's."""

from __future__ import annotations

import os
from typing import Any

import pytest

from prism import create_mock_provider
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent
from prism.sandbox.base import AgentSandbox
from prism.sandbox.coding import SandboxCodingToolSet, create_sandbox_coding_tools
from prism.security import NOOP_REDACTOR, allow_kinds, create_execution_policy

pytestmark = pytest.mark.anyio

GIT_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "GIT_AUTHOR_NAME": "Prism Test",
    "GIT_AUTHOR_EMAIL": "prism@example.invalid",
    "GIT_COMMITTER_NAME": "Prism Test",
    "GIT_COMMITTER_EMAIL": "prism@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/tmp",
    # bwrap's /workspace tmpfs belongs to root, the commands run as another uid
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": "/workspace",
}


def coding_tools(sandbox: AgentSandbox, *kinds: str) -> SandboxCodingToolSet:
    return create_sandbox_coding_tools(
        sandbox,
        execution_policy=lambda root: create_execution_policy(
            [root], [allow_kinds(*kinds)], redactor=NOOP_REDACTOR
        ),
        env=GIT_ENV,
        redactor=NOOP_REDACTOR,
    )


def call(call_id: str, tool: str, **arguments: Any) -> Any:
    return provider_tool_call(call_id, tool, arguments)


async def run_turns(tools: SandboxCodingToolSet, turns: list[list[Any]]) -> dict[str, Any]:
    """Runs the scripted turns in a session; each tool call's result by call id."""
    agent = create_agent(
        model={"provider": "mock", "model": "coder"},
        provider=create_mock_provider([*turns, [provider_text_delta("done"), provider_done()]]),
        tools=tools,
    )
    session = agent.create_session("sandbox-coding")
    await session.run("work in the sandbox")
    results: dict[str, Any] = {}
    for message in await session.messages():
        if message["role"] == "tool":
            for part in message["content"]:
                results[part["toolCallId"]] = part  # type: ignore[typeddict-item]
    return results


async def test_the_coding_tools_work_inside_the_sandbox(sandbox: AgentSandbox) -> None:
    tools = coding_tools(sandbox, "write", "edit", "shell")
    results = await run_turns(
        tools,
        [
            [call("w", "write", path="pkg/app.py", content="def add(a, b):\n    return a - b\n")],
            [call("r", "read", path="pkg/app.py")],
            [call("e", "edit", path="pkg/app.py", old_string="a - b", new_string="a + b")],
            [call("s", "search", pattern=r"return \w \+", glob=["*.py"])],
            [call("l", "list")],
            [call("x", "shell", argv=["python3", "-c", "import pkg.app as m; print(m.add(2, 3))"])],
            [call("t", "todo", todos=[{"content": "fix add", "status": "completed"}])],
        ],
    )
    assert not any(r.get("isError") for r in results.values()), results
    assert "return a - b" in str(results["r"]["result"])
    assert "pkg/app.py\n  2:    return a + b" in str(results["s"]["result"])
    assert str(results["l"]["result"]) == "pkg/app.py"
    assert "5" in str(results["x"]["result"])
    inside = await sandbox.exec_file("cat", ["/workspace/pkg/app.py"])
    assert inside.stdout_text == "def add(a, b):\n    return a + b\n"
    assert os.listdir(tools.view) == []  # nothing reached the host


async def test_escapes_through_the_tools_are_refused(sandbox: AgentSandbox, tmp_path: Any) -> None:
    tools = coding_tools(sandbox, "write", "edit", "shell")
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    planted = await sandbox.exec(
        "mkdir -p d && echo inside > d/f && ln -s /etc out && ln -s /etc/passwd d/link "
        "&& ln -s /tmp tmp"
    )
    assert planted.ok, planted.stderr_text
    results = await run_turns(
        tools,
        [
            [
                call("host", "read", path=str(secret)),
                call("abs", "read", path="/etc/hostname"),
                call("up", "write", path="../x.txt", content="x"),
            ],
            [
                call("dir", "read", path="out/passwd"),
                call("link", "read", path="d/link"),
                call("wdir", "write", path="tmp/evil", content="x"),
            ],
            [
                call("sdir", "search", pattern="root", path="out"),
                call("cwd", "shell", argv=["true"], cwd="/etc"),
                call("mkd", "write", path="tmp/sub/evil", content="x"),
                call("ok", "read", path="d/f"),
            ],
        ],
    )
    refused = {key: value for key, value in results.items() if value.get("isError")}
    assert set(refused) == {"host", "abs", "up", "dir", "link", "wdir", "sdir", "cwd", "mkd"}, (
        results
    )
    assert "inside" in str(results["ok"]["result"])
    assert "host secret" not in str(results) and "root:" not in str(results)
    listing = await sandbox.exec("ls -A /tmp; ls /workspace")
    assert listing.stdout_text.split() == ["d", "out", "tmp"]
    assert os.listdir(tools.view) == []


async def test_capabilities_are_the_sandboxes_own(sandbox: AgentSandbox, backend: str) -> None:
    tools = coding_tools(sandbox)
    assert tools.capabilities is sandbox.capabilities
    caps = tools.capabilities.to_json()
    assert caps["workspaceCoherent"] and caps["filesystemIsolated"] and caps["networkIsolated"]
    assert caps["backend"] == ("docker" if backend == "docker" else "native-bwrap")
    # the default policy (no rules, no approver) still decides inside each tool
    results = await run_turns(tools, [[call("w", "write", path="a.txt", content="x")]])
    assert results["w"].get("isError")
    assert (await sandbox.exec("ls /workspace")).stdout_text == ""


async def test_git_in_the_sandbox_workspace(native_ready: None) -> None:
    """git runs on native only: the Docker image is busybox + python3, no git."""
    from prism.sandbox.native import create_native_sandbox

    async with await create_native_sandbox() as sandbox:
        made = await sandbox.exec(
            "git init -q -b main && printf 'one\\n' > f.txt && git add f.txt && git commit -qm start",
            env=GIT_ENV,
        )
        assert made.ok, made.stderr_text
        tools = coding_tools(sandbox, "write", "edit", "shell")
        results = await run_turns(
            tools,
            [
                [call("r", "read", path="f.txt")],
                [call("e", "edit", path="f.txt", old_string="one", new_string="two")],
                [call("st", "git", op="status")],
                [call("d", "git", op="diff")],
                [call("a", "git", op="add", paths=["f.txt"])],
                [call("c", "git", op="commit", message="two")],
                [call("lg", "git", op="log")],
                [call("dotgit", "write", path=".git/config", content="x")],
            ],
        )
        assert results["dotgit"].get("isError")
        del results["dotgit"]
        assert not any(r.get("isError") for r in results.values()), results
        assert "f.txt" in str(results["st"]["result"]) and "+two" in str(results["d"]["result"])
        assert "two" in str(results["lg"]["result"]) and "start" in str(results["lg"]["result"])
        head = await sandbox.exec("git log --format=%s", env=GIT_ENV)
        assert head.stdout_text.split() == ["two", "start"]


async def test_shell_runs_in_a_subdirectory_of_the_sandbox_workspace(sandbox: AgentSandbox) -> None:
    tools = coding_tools(sandbox, "shell")
    assert (await sandbox.exec("mkdir -p sub/dir")).ok
    results = await run_turns(
        tools,
        [
            [
                call("pwd", "shell", argv=["pwd"], cwd="sub/dir"),
                call("no", "shell", argv=["pwd"], cwd="nope"),
            ]
        ],
    )
    assert "/workspace/sub/dir" in str(results["pwd"]["result"]), results
    assert results["no"].get("isError") and "not a directory" in str(results["no"]["result"])
