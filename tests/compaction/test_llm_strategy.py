"""The LLM compaction strategy: entry data, split turns, updates, file
operations, secrets, and options validated at construction."""

from __future__ import annotations

from typing import Any

import pytest
from tests.compaction.llm_support import (
    SECRET,
    SUMMARY_MODEL,
    Branch,
    dumped,
    prompt_of,
    summary_model,
)

from prism import _native
from prism.compaction import CompactionContext, is_compaction_entry_data
from prism.compaction.llm import (
    SPLIT_TURN_PROMPT,
    SUMMARY_PROMPT,
    UPDATE_SUMMARY_PROMPT,
    FileOperations,
    LlmCompactionOptions,
    collect_file_operations,
    create_llm_compaction_strategy,
    format_file_operations,
    prepare_llm_compaction,
    serialize_compaction_conversation,
)
from prism.errors import ConfigError
from prism.security import NOOP_REDACTOR, create_redactor
from prism.security.credentials import explicit_credential

pytestmark = pytest.mark.anyio

BIG = "x" * 4000  # ~1000 tokens


def coding_branch() -> Branch:
    """Three finished turns; the last two fit a 2,000-token budget."""
    b = Branch()
    b.user("turn one: read the config " + BIG)
    b.assistant("", ("c1", "read", {"path": "src/config.py"}))
    b.tool("c1", "read", "CONFIG = 1")
    b.assistant("read it")
    b.user("turn two: fix the bug " + BIG)
    b.assistant("", ("c2", "edit", {"path": "src/app.py", "old": "a", "new": "b"}))
    b.tool("c2", "edit", {"ok": True})
    b.assistant("fixed")
    b.user("turn three: add a test " + BIG)
    b.assistant("", ("c3", "write", {"path": "tests/test_app.py", "content": "def test(): ..."}))
    b.tool("c3", "write", {"ok": True})
    b.assistant("done")
    return b


async def test_compaction_entry_carries_core_and_llm_data() -> None:
    b = coding_branch()
    model = summary_model("## Goal\nFix the app.")
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=2000
    )
    result = await strategy.compact(b.context())
    (entry,) = result.entries
    data = entry["data"]
    assert entry["kind"] == "compaction" and entry["parentId"] == "e12"
    assert is_compaction_entry_data(data)
    assert data["strategy"] == "llm-compaction" and data["trigger"] == "manual"
    # Turn one is summarized; turns two and three stay raw.
    assert data["throughEntryId"] == "e4"
    assert data["firstKeptEntryId"] == "e5"
    assert data["keepEntryIds"] == [f"e{i}" for i in range(5, 13)]
    assert "isSplitTurn" not in data
    kept_tokens = sum(_native.estimate_entry_tokens(e) for e in b.entries[4:])
    before = sum(_native.estimate_entry_tokens(e) for e in b.entries)
    assert data["estimatedTokensBefore"] == before
    assert data["estimatedTokensAfter"] == (
        _native.estimate_text_tokens(result.summary) + 4 + kept_tokens
    )
    assert data["readFiles"] == ["src/config.py"] and data["modifiedFiles"] == []
    assert result.summary.startswith("## Goal\nFix the app.")
    assert result.summary.endswith("<read-files>\nsrc/config.py\n</read-files>")
    assert len(model.requests) == 1
    assert SUMMARY_PROMPT in prompt_of(model.requests[0])


async def test_split_turn_summarizes_the_prefix_with_one_extra_call() -> None:
    b = Branch()
    b.user("old question " + BIG)
    b.assistant("old answer")
    b.user("one long turn")  # e3: the turn that gets split
    for i in range(4):
        b.assistant("", (f"c{i}", "read", {"path": f"f{i}.py"}))
        b.tool(f"c{i}", "read", "y" * 3000)
    b.assistant("finished the long turn")
    model = summary_model("HISTORY", "PREFIX")
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1500
    )
    result = await strategy.compact(b.context())
    data = result.entries[0]["data"]
    assert data["isSplitTurn"] is True
    first = data["firstKeptEntryId"]
    kept = next(e for e in b.entries if e["id"] == first)
    assert kept["message"]["role"] == "assistant"  # never a tool result
    assert len(model.requests) == 2
    history, prefix = (prompt_of(r) for r in model.requests)
    assert "old question" in history and "one long turn" not in history
    assert "one long turn" in prefix and SPLIT_TURN_PROMPT in prefix
    assert "old question" not in prefix
    assert result.summary.index("HISTORY") < result.summary.index("PREFIX")
    assert "Earlier in the current turn" in result.summary
    # The prefix's tool calls count as file operations; the kept suffix's do not.
    kept_paths = {
        e["message"]["content"][0]["arguments"]["path"]
        for e in b.entries[b.entries.index(kept) :]
        if e["message"]["role"] == "assistant" and e["message"]["content"][0]["type"] == "tool_call"
    }
    assert set(data["readFiles"]).isdisjoint(kept_paths)
    assert data["readFiles"]


async def test_previous_summary_is_updated_not_resummarized() -> None:
    b = coding_branch()
    first = create_llm_compaction_strategy(
        provider=summary_model("FIRST SUMMARY"), model=SUMMARY_MODEL, keep_recent_tokens=2000
    )
    (compaction,) = (await first.compact(b.context())).entries
    b.entries.append(compaction)
    b.user("turn four " + BIG)
    b.assistant("four done")
    model = summary_model("SECOND SUMMARY")
    second = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1200
    )
    result = await second.compact(b.context())
    (request,) = model.requests
    prompt = prompt_of(request)
    assert UPDATE_SUMMARY_PROMPT in prompt and SUMMARY_PROMPT not in prompt
    assert "<previous-summary>\nFIRST SUMMARY" in prompt
    # The previous summary appears once, as the thing to update, not as history.
    assert prompt.count("FIRST SUMMARY") == 1
    # Turn one was summarized already; the kept turns two and three are new history.
    assert "turn one" not in prompt and "turn two" in prompt
    data = result.entries[0]["data"]
    # File lists carry over from the previous compaction.
    assert "src/config.py" in data["readFiles"]
    assert "src/app.py" in data["modifiedFiles"]


async def test_split_turn_without_new_history_carries_the_previous_summary() -> None:
    b = Branch()
    b.compaction("PREVIOUS", [])
    b.user("a long turn")
    for i in range(3):
        b.assistant("", (f"c{i}", "grep", {"pattern": "x"}))
        b.tool(f"c{i}", "grep", "z" * 3000)
    model = summary_model("PREFIX ONLY")
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=800
    )
    result = await strategy.compact(b.context())
    assert len(model.requests) == 1 and SPLIT_TURN_PROMPT in prompt_of(model.requests[0])
    assert result.summary.startswith("PREVIOUS") and "PREFIX ONLY" in result.summary


def test_file_operations_from_read_write_edit_calls() -> None:
    messages: list[Any] = [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_call", "id": "1", "name": "read", "arguments": {"path": "a.py"}},
                {"type": "tool_call", "id": "2", "name": "read", "arguments": {"path": "b.py"}},
                {"type": "tool_call", "id": "3", "name": "edit", "arguments": {"path": "b.py"}},
                {"type": "tool_call", "id": "4", "name": "write", "arguments": {"path": "c.py"}},
                {"type": "tool_call", "id": "5", "name": "grep", "arguments": {"path": "d.py"}},
                {"type": "tool_call", "id": "6", "name": "read", "arguments": {"path": 7}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_call", "name": "read", "arguments": {"path": "u"}}],
        },
    ]
    ops = collect_file_operations(messages)
    assert ops.read_files == ["a.py"]  # b.py was also edited: listed as modified
    assert ops.modified_files == ["b.py", "c.py"]
    assert format_file_operations(ops) == (
        "<read-files>\na.py\n</read-files>\n\n<modified-files>\nb.py\nc.py\n</modified-files>"
    )
    assert format_file_operations({"readFiles": [], "modifiedFiles": ["x"]}) == (
        "<modified-files>\nx\n</modified-files>"
    )
    assert format_file_operations(FileOperations()) == ""
    with pytest.raises(TypeError, match="FileOperations or a mapping"):
        format_file_operations(["a.py"])  # type: ignore[arg-type]


async def test_file_tracking_can_be_turned_off_or_kept_out_of_the_summary() -> None:
    b = coding_branch()
    off = create_llm_compaction_strategy(
        provider=summary_model("S"),
        model=SUMMARY_MODEL,
        keep_recent_tokens=2000,
        track_file_operations=False,
    )
    result = await off.compact(b.context())
    assert "readFiles" not in result.entries[0]["data"] and result.summary == "S"
    hidden = create_llm_compaction_strategy(
        provider=summary_model("S"),
        model=SUMMARY_MODEL,
        keep_recent_tokens=2000,
        include_file_operations=False,
    )
    result = await hidden.compact(b.context())
    assert result.entries[0]["data"]["readFiles"] == ["src/config.py"] and result.summary == "S"


def test_serialization_labels_roles_and_truncates_tool_results() -> None:
    b = Branch()
    b.message("system", {"type": "text", "text": "SYSTEM PROMPT"})
    b.user("hello")
    b.message(
        "assistant",
        {"type": "thinking", "text": "pondering"},
        {"type": "text", "text": "let me look"},
        {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "a.py"}},
    )
    b.tool("c1", "read", "r" * 50)
    b.tool("c2", "run", {"exit": 1}, error=True)
    text = serialize_compaction_conversation(
        b.entries, max_tool_result_chars=10, redactor=NOOP_REDACTOR
    )
    assert text == (
        "[User]: hello\n\n"
        "[Assistant thinking]: pondering\n\n"
        "[Assistant]: let me look\n\n"
        '[Assistant tool calls]: read(path="a.py")\n\n'
        "[Tool result read]: rrrrrrrrrr\n[... 40 more characters truncated]\n\n"
        '[Tool error run]: {"exit":1}'
    )
    assert "SYSTEM PROMPT" not in text


def test_a_cut_never_keeps_the_head_of_a_secret() -> None:
    b = Branch()
    b.tool("c1", "read", "abc" + SECRET + "tail")
    text = serialize_compaction_conversation(
        b.entries, max_tool_result_chars=8, redactor=create_redactor([SECRET])
    )
    assert SECRET[:5] not in text and "[REDACTED]"[:5] in text


async def test_secrets_never_reach_the_request_or_the_entry() -> None:
    credential_value = "cred-VALUE-998877665544"
    b = Branch()
    b.user(f"my key is {SECRET} " + BIG)
    b.assistant("", ("c1", "read", {"path": f"/home/{SECRET}/notes.txt"}))
    b.tool("c1", "read", {"body": f"token={SECRET}", "pad": "p" * 5000})
    b.assistant(f"the key {SECRET} works")
    b.user("next " + BIG)
    b.assistant("ok")
    seen: list[Any] = []

    def factory(key: str) -> Any:
        seen.append(key)
        # The model echoes both secrets back: the result must still be clean.
        return summary_model(f"echo {SECRET} and {key}")

    strategy = create_llm_compaction_strategy(
        summary_provider=factory,
        summary_model=SUMMARY_MODEL,
        credential=explicit_credential(credential_value),
        keep_recent_tokens=1100,
        max_tool_result_chars=100,
    )
    result = await strategy.compact(b.context(redactor=create_redactor([SECRET])))
    assert seen == [credential_value]
    stored = dumped(result.entries)
    assert SECRET not in stored and credential_value not in stored
    assert "[REDACTED]" in result.summary


async def test_the_contexts_redactor_masks_the_request() -> None:
    b = coding_branch()
    b.entries[0]["message"]["content"][0]["text"] += f" {SECRET}"
    model = summary_model("fine")
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=2000
    )
    await strategy.compact(b.context(redactor=create_redactor([SECRET])))
    assert SECRET not in dumped(model.requests)


async def test_summary_is_capped_at_max_summary_tokens() -> None:
    b = coding_branch()
    strategy = create_llm_compaction_strategy(
        provider=summary_model("word " * 2000),
        model=SUMMARY_MODEL,
        keep_recent_tokens=2000,
        max_summary_tokens=100,
    )
    result = await strategy.compact(b.context())
    assert _native.estimate_text_tokens(result.summary) <= 100
    assert "[summary truncated]" in result.summary
    assert result.summary.endswith("</read-files>")  # file lists survive the cap


async def test_request_options_carry_budget_thinking_and_provider_options() -> None:
    b = coding_branch()
    model = summary_model("S")
    strategy = create_llm_compaction_strategy(
        provider=model,
        model=SUMMARY_MODEL,
        keep_recent_tokens=2000,
        reserve_tokens=1000,
        thinking_level="low",
        provider_options={"cacheRetention": "short", "extra": {"x": 1}},
        custom_instructions="Focus on failing tests.",
    )
    await strategy.compact(b.context())
    (request,) = model.requests
    assert request["options"] == {
        "cacheRetention": "short",
        "extra": {"x": 1, "thinkingLevel": "low"},
        "maxTokens": 800,
    }
    assert prompt_of(request).endswith("Also focus on: Focus on failing tests.")


async def test_request_policies_run_before_the_call() -> None:
    b = coding_branch()
    model = summary_model("S")

    async def tag(request: Any) -> Any:
        return {**request, "metadata": {**request.get("metadata", {}), "policy": "ran"}}

    class Temperature:
        def apply(self, request: Any) -> Any:
            request["options"]["temperature"] = 0
            return None  # in place

    strategy = create_llm_compaction_strategy(
        provider=model,
        model=SUMMARY_MODEL,
        keep_recent_tokens=2000,
        provider_request_policies=[tag, Temperature()],
    )
    await strategy.compact(b.context())
    (request,) = model.requests
    assert request["metadata"]["policy"] == "ran" and request["options"]["temperature"] == 0


async def test_oversized_history_is_trimmed_to_the_summary_window() -> None:
    b = Branch()
    for i in range(40):
        b.user(f"question {i} " + "q" * 2000)
        b.assistant(f"answer {i}")
    model = summary_model("S")
    window = 6000
    strategy = create_llm_compaction_strategy(
        provider=model,
        model={**SUMMARY_MODEL, "limits": {"contextWindow": window}},
        keep_recent_tokens=1000,
        max_summary_tokens=1000,
    )
    await strategy.compact(b.context())
    (request,) = model.requests
    used = sum(_native.estimate_message_tokens(m) for m in request["messages"])
    assert used + 1000 <= window
    prompt = prompt_of(request)
    assert "earlier part(s) omitted" in prompt
    assert "question 37" in prompt and "question 0 " not in prompt  # newest history kept


def test_prepare_accepts_a_bare_entry_list() -> None:
    b = coding_branch()
    prep = prepare_llm_compaction(b.entries, keep_recent_tokens=2000)
    assert prep.session_id == "s1" and prep.trigger == "manual"
    assert [e["id"] for e in prep.history_entries] == ["e1", "e2", "e3", "e4"]
    assert prep.has_work
    # Everything fits the budget: the newest turn is kept, the turns before it summarized.
    everything = prepare_llm_compaction(b.entries, keep_recent_tokens=10**9)
    assert everything.has_work and not everything.is_split_turn
    assert everything.first_kept_entry_id == "e9" and everything.history_entries[-1]["id"] == "e8"
    single = Branch()
    single.user("one turn")
    single.assistant("only")
    assert not prepare_llm_compaction(single.entries, keep_recent_tokens=10**9).has_work


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": SUMMARY_MODEL}, "needs provider="),
        ({"provider": "nope", "model": SUMMARY_MODEL}, "AIProvider"),
        ({"provider": lambda key: None, "model": SUMMARY_MODEL}, "needs credential="),
        ({"provider": summary_model(), "model": SUMMARY_MODEL, "credential": "k" * 12}, "factory"),
        ({"provider": summary_model()}, "needs model="),
        ({"provider": summary_model(), "model": {"provider": "mock"}}, "model.model"),
        (
            {
                "provider": summary_model(),
                "model": SUMMARY_MODEL,
                "summary_model": {"provider": "a", "model": "b"},
            },
            "aliases",
        ),
        (
            {"provider": summary_model(), "model": SUMMARY_MODEL, "keep_recent_tokens": 0},
            "keep_recent_tokens",
        ),
        (
            {"provider": summary_model(), "model": SUMMARY_MODEL, "reserve_tokens": True},
            "reserve_tokens",
        ),
        (
            {
                "provider": summary_model(),
                "model": SUMMARY_MODEL,
                "max_summary_tokens": 10,
                "max_output_tokens": 20,
            },
            "aliases",
        ),
        (
            {"provider": summary_model(), "model": SUMMARY_MODEL, "max_tool_result_chars": 0},
            "max_tool_result_chars",
        ),
        (
            {"provider": summary_model(), "model": SUMMARY_MODEL, "thinking_level": "huge"},
            "thinking_level",
        ),
        (
            {"provider": summary_model(), "model": SUMMARY_MODEL, "provider_options": []},
            "provider_options",
        ),
        (
            {"provider": summary_model(), "model": SUMMARY_MODEL, "provider_request_policies": [1]},
            r"policies\[0\]",
        ),
        (
            {"provider": summary_model(), "model": SUMMARY_MODEL, "track_file_operations": 1},
            "true or false",
        ),
        (
            {"provider": summary_model(), "model": SUMMARY_MODEL, "custom_instructions": 3},
            "custom_instructions",
        ),
        ({"provider": summary_model(), "model": SUMMARY_MODEL, "retry": "often"}, "retry"),
        ({"provider": lambda k: None, "model": SUMMARY_MODEL, "credential": 5}, "credential"),
        (
            {
                "provider": lambda k: None,
                "model": SUMMARY_MODEL,
                "credential": "k" * 12,
                "credential_request": "x",
            },
            "credential_request",
        ),
    ],
)
def test_invalid_options_fail_at_construction(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_llm_compaction_strategy(**kwargs)


def test_the_strategy_takes_no_secrets_of_its_own() -> None:
    # The agent's redactor reaches it through each CompactionContext.
    with pytest.raises(TypeError, match="secrets"):
        create_llm_compaction_strategy(  # type: ignore[call-arg]
            provider=summary_model(), model=SUMMARY_MODEL, secrets=[SECRET]
        )
    with pytest.raises(ConfigError, match="secrets"):
        LlmCompactionOptions.from_json({"secrets": [SECRET]}, provider=summary_model())


def test_options_from_camel_case_json() -> None:
    options = LlmCompactionOptions.from_json(
        {
            "summaryModel": SUMMARY_MODEL,
            "keepRecentTokens": 5000,
            "maxOutputTokens": 700,
            "thinkingLevel": "high",
        },
        provider=summary_model(),
    )
    assert options.keep_recent_tokens == 5000 and options.max_summary_tokens == 700
    assert options.model == SUMMARY_MODEL and options.thinking_level == "high"
    with pytest.raises(ConfigError, match="unknown llm compaction option 'keepRecent'"):
        LlmCompactionOptions.from_json({"keepRecent": 1}, provider=summary_model())


def test_repr_hides_credentials() -> None:
    strategy = create_llm_compaction_strategy(
        summary_provider=lambda key: summary_model(),
        summary_model=SUMMARY_MODEL,
        credential=explicit_credential(SECRET),
    )
    assert SECRET not in repr(strategy) and SECRET not in repr(strategy.options)


async def test_context_for_prepare_uses_trigger() -> None:
    b = coding_branch()
    prep = prepare_llm_compaction(
        CompactionContext(
            session_id="s9", entries=b.entries, trigger="auto", redactor=NOOP_REDACTOR
        ),
        keep_recent_tokens=2000,
    )
    assert prep.entry_data(strategy="x")["trigger"] == "auto"
