"""``python -m prism.testing``: a smoke check of an installed Prism.

It needs no network and no Rust toolchain: the native core is loaded and
exercised, the mock provider passes the provider conformance checks, and an
agent runs a tool round on the JSONL store in a temporary directory. Exit 0
and one summary line on success; the first failed check is raised.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio


async def _checks() -> list[str]:
    from prism import _native

    passed: list[str] = []
    assert _native.json_length({"a": [1, "é"]}) == len('{"a":[1,"é"]}')
    assert _native.estimate_text_tokens("abcd" * 10) == 10
    passed.append("native core")
    await _check_mock_provider()
    passed.append("mock provider conformance")
    await _check_agent_round()
    passed.append("agent tool round on the JSONL store, redacted")
    return passed


async def _check_mock_provider() -> None:
    from prism.providers import (
        create_mock_provider,
        provider_done,
        provider_text_delta,
        provider_tool_call_delta,
        provider_usage,
    )
    from prism.testing import (
        assert_abort_is_observed,
        assert_provider_stream_conforms,
        assert_tool_call_deltas_reconstruct,
        collect_provider_events,
    )

    request = {
        "model": {"provider": "mock", "model": "smoke"},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }
    reply = [provider_text_delta("hel"), provider_text_delta("lo"), provider_usage(input_tokens=2)]
    await assert_provider_stream_conforms(
        create_mock_provider([*reply, provider_done("stop")]),
        request,  # type: ignore[arg-type]
        expect_text="hello",
        expect_stop_reason="stop",
    )
    fragments = [
        provider_tool_call_delta(0, "c1", "add", '{"a": 1,'),
        provider_tool_call_delta(0, arguments_delta=' "b": 2}'),
        provider_done("tool_use"),
    ]
    events = await collect_provider_events(create_mock_provider(fragments), request)  # type: ignore[arg-type]
    assert_tool_call_deltas_reconstruct(
        events, [{"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}]
    )
    await assert_abort_is_observed(
        create_mock_provider([*reply, provider_done("stop")], delay_ms=1),
        request,  # type: ignore[arg-type]
    )


async def _check_agent_round() -> None:
    from prism.providers import (
        create_mock_provider,
        provider_done,
        provider_text_delta,
        provider_tool_call,
    )
    from prism.runtime import create_agent
    from prism.stores.jsonl import create_jsonl_session_store
    from prism.testing import assert_no_secret_leak
    from prism.tools import define_tool

    calls = [provider_tool_call("c1", "add", {"a": 1, "b": 2}), provider_done("tool_use")]
    secret = "sk-smoke-canary-0123456789"
    with tempfile.TemporaryDirectory() as directory:
        store = create_jsonl_session_store(Path(directory) / "sessions.jsonl")
        agent = create_agent(
            model={"provider": "mock", "model": "smoke"},
            provider=create_mock_provider(
                [calls, [provider_text_delta(f"3 {secret}"), provider_done("stop")]]
            ),
            tools=[define_tool("add", lambda args, ctx: args["a"] + args["b"])],
            store=store,
            secrets=[secret],
        )
        seen: list[object] = []
        session = agent.create_session("smoke")
        session.subscribe(seen.append)
        result = await session.run("1 + 2?")
        assert result.text == "3 [REDACTED]", result.text
        assert_no_secret_leak(seen, [secret])
        assert secret not in (Path(directory) / "sessions.jsonl").read_text()
        reopened = await agent.open_session("smoke")
        assert [m["role"] for m in await reopened.messages()] == [
            "user",
            "assistant",
            "tool",
            "assistant",
        ]


def main() -> int:
    passed = anyio.run(_checks)
    sys.stdout.write(f"prism.testing: {len(passed)} checks passed ({'; '.join(passed)})\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
