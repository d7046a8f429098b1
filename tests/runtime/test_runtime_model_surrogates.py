"""Half a surrogate pair in what the model sent (a JSON ``\\ud800`` escape
decodes to a lone surrogate) used to end the run with a StoreError when the
assistant message was appended; it is mended to U+FFFD for every provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from prism import create_mock_provider, define_tool
from prism._text import mend_surrogates, mend_value
from prism.providers import (
    provider_done,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.stores import create_jsonl_session_store

pytestmark = pytest.mark.anyio


def test_mending_keeps_valid_text_and_pairs() -> None:
    assert mend_surrogates("plain") == "plain"
    assert mend_surrogates("caf\u00e9 \U0001f600") == "caf\u00e9 \U0001f600"
    assert mend_surrogates("a\ud83d\ude00b") == "a\U0001f600b"  # a pair as two code points
    assert mend_surrogates("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    value = {"k": ["ok", {"n": 1}]}
    assert mend_value(value) is value  # nothing to mend: the same object
    assert mend_value({"q\udc00": ["x\ud800"]}) == {"q\ufffd": ["x\ufffd"]}


async def test_a_lone_surrogate_from_the_model_is_stored_as_a_replacement(tmp_path: Path) -> None:
    seen: list[dict[str, object]] = []

    def lookup(q: str) -> str:
        """Look something up."""
        seen.append({"q": q})
        return "found"

    provider = create_mock_provider(
        [
            [
                provider_thinking_delta("hm\udbff"),
                provider_text_delta("caf\udce9"),
                provider_tool_call("c1", "lookup", {"q": "x\ud800"}),
                provider_done("tool_use"),
            ],
            [provider_text_delta("done \ud800"), provider_done("stop")],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=provider,
        tools=[define_tool(lookup)],
        store=create_jsonl_session_store(tmp_path / "s.jsonl"),
    )
    session = agent.create_session("s")
    result = await session.run("go")
    assert result.text == "done \ufffd"
    assert seen == [{"q": "x\ufffd"}]
    first = [e for e in await session.entries() if e["kind"] == "message"][1]
    assert first["message"]["content"][:3] == [
        {"type": "thinking", "text": "hm\ufffd"},
        {"type": "text", "text": "caf\ufffd"},
        {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"q": "x\ufffd"}},
    ]
