"""``prism --agent package.module:factory`` and ``prism.cli.serve_rpc``: the
host's own agent (tools, middleware, store, provider) in print, json and rpc
modes, through real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli.conftest import SAFETY_TIMEOUT, RpcClient, prism_executable

HOST_APP = '''
import os

from prism import create_middleware_registry, create_mock_provider, tool
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent
from prism.stores import create_sqlite_session_store


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def model(request):
    messages = request["messages"]
    users = sum(1 for m in messages if m["role"] == "user")
    last = messages[-1]
    if last["role"] == "user":
        key = last["content"][0]["text"]
        return [provider_tool_call("c1", "lookup", {"key": key}), provider_done("tool_use")]
    value = last["content"][0]["result"]
    return [provider_text_delta(f"found {value} ({users} user messages)"), provider_done("stop")]


async def shout(result, next):
    result = {**result, "value": result["value"] + "!"}
    return await next(result)


def build():
    middleware = create_middleware_registry()
    middleware.use("tool_result", shout)
    return create_agent(
        model={"provider": "hostmock", "model": "m1"},
        provider=create_mock_provider(model, name="hostmock"),
        tools=[lookup],
        middleware=middleware,
        store=create_sqlite_session_store(os.environ["HOSTAPP_DB"]),
    )


async def build_async():
    return build()


def not_an_agent():
    return 42


def broken():
    raise RuntimeError("database unreachable")


settings = {"a": 1}
'''

EMBED = """
import sys

import anyio

from hostapp.agent import build
from prism.cli import serve_rpc


async def main() -> None:
    code = await serve_rpc(build(), session="embedded")
    sys.stderr.write(f"served, exit {code}\\n")


anyio.run(main)
"""


@pytest.fixture
def host_app(tmp_path: Path, cli_env: dict[str, str]) -> tuple[Path, dict[str, str]]:
    package = tmp_path / "app" / "hostapp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(HOST_APP)
    (tmp_path / "app" / "embed.py").write_text(EMBED)
    env = dict(cli_env)
    env["HOSTAPP_DB"] = str(tmp_path / "host.sqlite")
    return tmp_path / "app", env


def run_in(app: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    # The console script from the project directory, as a host would run it:
    # the current directory is importable.
    return subprocess.run(
        [str(prism_executable()), *args],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )


def test_print_mode_uses_the_hosts_tools_middleware_and_store(
    host_app: tuple[Path, dict[str, str]],
) -> None:
    app, env = host_app
    first = run_in(app, env, "--agent", "hostapp.agent:build", "--session", "s1", "-p", "k1")
    assert (first.returncode, first.stderr) == (0, "")
    assert first.stdout == "found value-of-k1! (1 user messages)"
    # The agent's own SQLite store kept the session: the second run sees the first.
    second = run_in(app, env, "--agent", "hostapp.agent:build_async", "--session", "s1", "-p", "k2")
    assert (second.returncode, second.stderr) == (0, "")
    assert second.stdout == "found value-of-k2! (2 user messages)"
    assert Path(env["HOSTAPP_DB"]).exists()
    assert not (Path(env["PRISM_HOME"]) / "sessions.jsonl").exists()


def test_json_mode_streams_the_hosts_tool_calls(host_app: tuple[Path, dict[str, str]]) -> None:
    app, env = host_app
    done = run_in(app, env, "--agent", "hostapp.agent:build", "--mode", "json", "-p", "k")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    calls = [e["toolCall"]["name"] for e in events if e["type"] == "tool_call"]
    results = [e["result"]["value"] for e in events if e["type"] == "tool_result"]
    assert calls == ["lookup"] and results == ["value-of-k!"]
    assert events[-1]["type"] == "run_finished"


def test_rpc_mode_drives_the_hosts_agent(host_app: tuple[Path, dict[str, str]]) -> None:
    app, env = host_app
    env = {**env, "PYTHONPATH": os.pathsep.join([str(app), env.get("PYTHONPATH", "")])}
    client = RpcClient(env, "--agent", "hostapp.agent:build")
    try:
        client.send({"id": "1", "command": "prompt", "params": {"input": "k"}})
        events, response = client.until_response("1")
        assert response["ok"] is True, response
        assert response["result"]["text"] == "found value-of-k! (1 user messages)"
        assert "tool_call" in [e["event"]["type"] for e in events]
        state = client.request({"id": "2", "command": "state"})
        assert state["result"]["model"] == {"provider": "hostmock", "model": "m1"}
        same = client.request({"id": "3", "command": "setModel", "params": {"model": "m2"}})
        assert same["ok"] is True and same["result"]["model"]["model"] == "m2"
        other = client.request(
            {
                "id": "4",
                "command": "setModel",
                "params": {"model": {"model": "x", "provider": "openai"}},
            }
        )
        assert other["ok"] is False
        assert "cannot reach provider 'openai'" in other["error"]["message"]
        code, rest, stderr = client.close()
        assert (code, rest, stderr) == (0, [], b"")
    finally:
        client.kill()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("hostapp.agent", "--agent must look like package.module:factory (got 'hostapp.agent')"),
        ("nowhere.mod:build", "--agent nowhere.mod:build: cannot import 'nowhere.mod': "),
        ("hostapp.agent:missing", "'hostapp.agent' has no attribute 'missing'"),
        ("hostapp.agent:settings", "'settings' is a dict, not a factory returning an Agent"),
        ("hostapp.agent:not_an_agent", "the factory returned a int, not an Agent"),
        (
            "hostapp.agent:broken",
            "--agent hostapp.agent:broken: the factory raised RuntimeError: database unreachable",
        ),
    ],
)
def test_bad_agent_specs_are_one_line_usage_errors(
    host_app: tuple[Path, dict[str, str]], spec: str, message: str
) -> None:
    app, env = host_app
    for mode in (("-p", "hi"), ("--mode", "rpc")):
        done = run_in(app, env, "--agent", spec, *mode)
        assert done.returncode == 2, (mode, done.stderr)
        assert done.stderr.startswith("prism: error: ") and message in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and done.stdout == ""


def test_flags_that_build_an_agent_are_refused_with_agent(
    host_app: tuple[Path, dict[str, str]],
) -> None:
    app, env = host_app
    done = run_in(app, env, "--agent", "hostapp.agent:build", "--system", "x", "-p", "hi")
    assert done.returncode == 2
    assert (
        "--agent hostapp.agent:build brings its own agent; --system does not apply" in done.stderr
    )


def test_serve_rpc_embeds_the_server_on_stdio(host_app: tuple[Path, dict[str, str]]) -> None:
    app, env = host_app
    requests = [
        {"id": "1", "command": "prompt", "params": {"input": "k"}},
        {"id": "2", "command": "state"},
    ]
    done = subprocess.run(
        [sys.executable, "embed.py"],
        cwd=app,
        env=env,
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "served, exit 0\n"
    messages: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
    responses = {m["id"]: m for m in messages if "ok" in m}
    assert responses["1"]["result"]["text"] == "found value-of-k! (1 user messages)"
    assert responses["1"]["result"]["sessionId"] == "embedded"
    assert responses["2"]["result"]["model"] == {"provider": "hostmock", "model": "m1"}


@pytest.mark.anyio
async def test_serve_rpc_refuses_a_bad_session_id_before_reading(tmp_path: Path) -> None:
    import io

    from prism import ConfigError, create_mock_provider
    from prism.cli import serve_rpc
    from prism.providers import provider_done
    from prism.runtime import create_agent

    agent = create_agent(
        model={"provider": "mock", "model": "m"}, provider=create_mock_provider([provider_done()])
    )
    source = io.BytesIO(b'{"id": "1", "command": "state"}\n')
    with pytest.raises(ConfigError, match="serve_rpc session must not be empty"):
        await serve_rpc(agent, input=source, output=io.BytesIO(), session="")
    assert source.tell() == 0
