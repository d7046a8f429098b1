"""LLM compaction: a summary model writes the compaction summary.

A coding session reads and edits files; then the session compacts with the
LLM strategy, once by hand and once automatically. The summary model is the
mock provider, so this runs offline. Run: .venv/bin/python examples/llm_compaction.py
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from prism import create_mock_provider, define_tool
from prism.compaction import CompactionOptions
from prism.compaction.llm import (
    create_llm_compaction_extension,
    create_llm_compaction_strategy,
)
from prism.extensions import create_extension_kernel
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR

API_KEY = "sk-example-not-a-real-key-123"
MODEL = {"provider": "mock", "model": "coder", "limits": {"contextWindow": 32_000}}
FILES = {"src/app.py": "def main():\n    return 1\n" * 80, "README.md": "# app\n" * 300}


def main_model(request: Any) -> list[Any]:
    """Reads the file the user names, edits it, then answers."""
    last = request["messages"][-1]
    if last["role"] == "user":
        path = "README.md" if "readme" in last["content"][0]["text"] else "src/app.py"
        return [
            provider_tool_call(f"r{len(request['messages'])}", "read", {"path": path}),
            provider_done(),
        ]
    if last["role"] == "tool" and last["content"][0]["name"] == "read":
        path = "README.md" if last["content"][0]["result"].startswith("#") else "src/app.py"
        return [
            provider_tool_call(
                f"e{len(request['messages'])}", "edit", {"path": path, "old": "1", "new": "2"}
            ),
            provider_done(),
        ]
    return [provider_text_delta("Done. " + "details " * 120), provider_done()]


def summary_model(request: Any) -> list[Any]:
    """Stands in for a cheap summary model: answers in the requested layout."""
    prompt = request["messages"][-1]["content"][0]["text"]
    kind = "update" if "<previous-summary>" in prompt else "first"
    text = f"## Goal\nKeep the app working ({kind} summary).\n\n## Next steps\n1. Run the tests."
    return [provider_text_delta(text), provider_done()]


async def main() -> None:
    summaries = create_mock_provider(summary_model, name="summary")
    strategy = create_llm_compaction_strategy(
        provider=summaries,
        model={"provider": "mock", "model": "cheap-summary"},
        keep_recent_tokens=2_000,  # small, so this short demo has something to summarize
        reserve_tokens=4_096,
        custom_instructions="Keep file paths exact.",
    )  # it redacts with the agent's redactor, which each compaction hands it
    tools = [
        define_tool("read", lambda args, ctx: FILES[args["path"]]),
        define_tool("edit", lambda args, ctx: {"ok": True}),
    ]
    agent = create_agent(
        model=MODEL,
        provider=create_mock_provider(main_model),
        tools=tools,
        secrets=[API_KEY],
        compaction=CompactionOptions(
            strategy=strategy, trigger={"type": "input_ratio", "ratio": 0.5}
        ),
    )
    session = agent.create_session("demo")

    # 1. Some work, then compact by hand.
    await session.run(f"Fix src/app.py (my key is {API_KEY})", compaction=False)
    await session.run("Now update the readme", compaction=False)
    await session.run("Check src/app.py again", compaction=False)
    await session.run("And the readme once more", compaction=False)
    entry = await session.compact(strategy=strategy)
    data = entry["data"]
    print("manual compaction:", data["strategy"], data["trigger"])
    print(
        "kept messages:",
        len(data["keepEntryIds"]),
        "first kept:",
        data["firstKeptEntryId"] is not None,
    )
    print(
        "tokens before -> after:", data["estimatedTokensBefore"], "->", data["estimatedTokensAfter"]
    )
    print("read files:", data["readFiles"], "modified files:", data["modifiedFiles"])
    print("summary starts:", entry["summary"].splitlines()[0])

    # 2. The requests the summary model received: the history, and (on a split
    #    turn) the beginning of the turn the cut fell in, with a smaller budget.
    print("split turn:", data.get("isSplitTurn", False), "summary calls:", summaries.turns)
    request = summaries.requests[0]
    prompt = request["messages"][-1]["content"][0]["text"]
    print("request messages:", [m["role"] for m in request["messages"]])
    print("maxTokens per call:", [r["options"]["maxTokens"] for r in summaries.requests])
    print("conversation tagged:", prompt.startswith("<conversation>"))
    print("secret sent:", API_KEY in json.dumps(summaries.requests))

    # 3. Auto-compaction with the same strategy (input_ratio trigger), updating the summary.
    for i in range(12):
        await session.run(f"Task {i}: improve src/app.py " + "context " * 300)
    compactions = [e for e in await session.branch_entries() if e["kind"] == "compaction"]
    print(
        "compactions:",
        len(compactions),
        "auto:",
        sum(e["data"]["trigger"] == "auto" for e in compactions),
    )
    print("latest summary starts:", compactions[-1]["summary"].splitlines()[1])

    # 4. The same strategy through an extension kernel: registration is inert.
    kernel = create_extension_kernel(redactor=NOOP_REDACTOR)
    calls_before = summaries.turns
    await kernel.load([create_llm_compaction_extension(strategy)])
    resolved = kernel.registries.compaction_strategies.resolve("llm-compaction")
    print(
        "registered:",
        kernel.registries.compaction_strategies.names(),
        "calls at load:",
        summaries.turns - calls_before,
    )
    print("same strategy:", resolved is strategy)


if __name__ == "__main__":
    anyio.run(main)
