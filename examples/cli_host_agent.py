"""The host's own agent in the CLI: `prism --agent cli_host_agent:build` runs
this module's agent (its typed tool, its middleware) in print mode, and
`prism.cli.serve_rpc` embeds the RPC server around the same agent.

Run from this directory (the current directory is importable for --agent):
    python cli_host_agent.py
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from prism import create_middleware_registry, create_mock_provider, tool
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import Agent, create_agent


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def model(request: dict[str, Any]) -> list[Any]:
    last = request["messages"][-1]
    if last["role"] == "user":
        return [provider_tool_call("c1", "add", {"a": 2, "b": 3}), provider_done("tool_use")]
    return [provider_text_delta(f"2 + 3 = {last['content'][0]['result']}"), provider_done("stop")]


async def audit(result: Any, next: Any) -> Any:
    sys.stderr.write(f"audit: {result['name']} -> {result['value']}\n")
    return await next(result)


def build() -> Agent:
    """The factory `prism --agent cli_host_agent:build` calls."""
    middleware = create_middleware_registry()
    middleware.use("tool_result", audit)
    return create_agent(
        model={"provider": "mock", "model": "host"},
        provider=create_mock_provider(model),
        tools=[add],
        middleware=middleware,
    )


def main() -> None:
    here = Path(__file__).resolve().parent
    done = subprocess.run(
        [sys.executable, "-m", "prism", "--agent", "cli_host_agent:build", "-p", "2 + 3?"],
        cwd=here,
        capture_output=True,
        text=True,
        check=True,
    )
    print("prism --agent:", done.stdout, "|", done.stderr.strip())

    import anyio

    from prism.cli import serve_rpc

    requests = b'{"id": "1", "command": "prompt", "params": {"input": "2 + 3?"}}\n'
    output = io.BytesIO()
    code = anyio.run(lambda: serve_rpc(build(), input=io.BytesIO(requests), output=output))
    responses = [json.loads(line) for line in output.getvalue().splitlines()]
    answer = next(r for r in responses if r.get("id") == "1" and "ok" in r)
    print("serve_rpc:", answer["result"]["text"], "exit", code)


if __name__ == "__main__":
    main()
