"""The default compaction strategy: what it summarizes, keeps, caps, redacts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from prism.compaction import (
    TRUNCATION_MARKER,
    CompactionContext,
    create_default_compaction_strategy,
    is_compaction_entry_data,
)
from prism.errors import ConfigError
from prism.security import NOOP_REDACTOR, create_redactor
from prism.stores import create_memory_session_store

pytestmark = pytest.mark.anyio

SECRET = "sk-test-SECRET-0123456789"


def msg(i: int, role: str, *blocks: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    return {
        "id": f"e{i}",
        "sessionId": "s1",
        "parentId": parent if parent is not None else (f"e{i - 1}" if i > 1 else None),
        "kind": "message",
        "message": {"role": role, "content": list(blocks)},
    }


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def conversation() -> list[dict[str, Any]]:
    return [
        {
            "id": "e1",
            "sessionId": "s1",
            "parentId": None,
            "kind": "model_change",
            "model": {"provider": "mock", "model": "m1"},
        },
        msg(2, "system", text("you are a bot")),
        msg(3, "user", text("read the file"), {"type": "image", "url": "https://x/y.png"}),
        msg(
            4,
            "assistant",
            {"type": "thinking", "text": "private reasoning"},
            {
                "type": "tool_call",
                "id": "c1",
                "name": "read_file",
                "arguments": {"path": "/etc/secret"},
            },
        ),
        msg(
            5,
            "tool",
            {
                "type": "tool_result",
                "toolCallId": "c1",
                "name": "read_file",
                "result": {"body": "FULL FILE BODY"},
                "isError": True,
            },
        ),
        msg(6, "assistant", text("the file is missing")),
        {
            "id": "e7",
            "sessionId": "s1",
            "parentId": "e6",
            "kind": "summary",
            "summary": "earlier notes",
        },
        {"id": "e8", "sessionId": "s1", "parentId": "e7", "kind": "label", "label": "checkpoint"},
        {
            "id": "e9",
            "sessionId": "s1",
            "parentId": "e8",
            "kind": "custom",
            "customType": "host",
            "data": {"private": "host data"},
        },
        msg(10, "user", text("next question")),
        msg(11, "assistant", text("next answer")),
    ]


async def test_summary_of_older_entries_and_kept_recent_messages() -> None:
    entries = conversation()
    before = copy.deepcopy(entries)
    strategy = create_default_compaction_strategy(keep_recent_entries=2)
    result = await strategy.compact(
        CompactionContext(session_id="s1", entries=entries, redactor=NOOP_REDACTOR)
    )  # type: ignore[arg-type]
    assert entries == before  # raw entries untouched
    assert result.summary == "\n".join(
        [
            "model: mock/m1",
            "user: read the file [image]",
            "tool call: read_file [c1]",
            "tool result: read_file [c1] (error)",
            "assistant: the file is missing",
            "summary: earlier notes",
            "label: checkpoint",
        ]
    )
    for hidden in (
        "you are a bot",
        "private reasoning",
        "/etc/secret",
        "FULL FILE BODY",
        "host data",
    ):
        assert hidden not in result.summary
    (entry,) = result.entries
    assert entry["kind"] == "compaction"
    assert entry["sessionId"] == "s1"
    assert entry["parentId"] == "e11"
    assert entry["summary"] == result.summary
    assert entry["data"] == {  # type: ignore[typeddict-item]
        "throughEntryId": "e9",
        "keepEntryIds": ["e10", "e11"],
        "strategy": "default-compaction",
        "trigger": "manual",
    }
    assert is_compaction_entry_data(entry["data"])  # type: ignore[typeddict-item]
    assert entry["id"].startswith("entry_")
    assert entry["createdAt"].endswith("Z")


async def test_entry_is_accepted_by_a_store() -> None:
    store = create_memory_session_store()
    entries = conversation()
    await store.append_many(entries)  # type: ignore[arg-type]
    result = await create_default_compaction_strategy().compact(
        CompactionContext(
            session_id="s1", entries=await store.list("s1"), trigger="auto", redactor=NOOP_REDACTOR
        )
    )
    await store.append_many(result.entries)
    assert (await store.list("s1"))[-1] == result.entries[0]


async def test_context_overrides_and_ids() -> None:
    ids = iter(["cmp_1"])
    strategy = create_default_compaction_strategy(name="mine", keep_recent_entries=8)
    result = await strategy.compact(
        CompactionContext(
            session_id="s1",
            entries=conversation(),  # type: ignore[arg-type]
            trigger="host-trigger",
            keep_recent_entries=0,
            leaf_id="e6",
            new_entry_id=lambda: next(ids),
            redactor=NOOP_REDACTOR,
        )
    )
    (entry,) = result.entries
    assert entry["id"] == "cmp_1"
    assert entry["parentId"] == "e6"
    assert entry["data"]["keepEntryIds"] == []  # type: ignore[typeddict-item]
    assert entry["data"]["throughEntryId"] == "e11"  # type: ignore[typeddict-item]
    assert entry["data"]["strategy"] == "mine"  # type: ignore[typeddict-item]
    assert entry["data"]["trigger"] == "host-trigger"  # type: ignore[typeddict-item]
    assert result.summary.endswith("user: next question\nassistant: next answer")


async def test_keep_more_than_available_summarizes_only_the_prefix() -> None:
    result = await create_default_compaction_strategy(keep_recent_entries=50).compact(
        CompactionContext(session_id="s1", entries=conversation(), redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
    )
    assert result.summary == "model: mock/m1"
    assert result.entries[0]["data"]["throughEntryId"] == "e1"  # type: ignore[typeddict-item]
    assert len(result.entries[0]["data"]["keepEntryIds"]) == 7  # type: ignore[typeddict-item]


async def test_empty_branch() -> None:
    result = await create_default_compaction_strategy().compact(
        CompactionContext(session_id="s1", entries=[], redactor=NOOP_REDACTOR)
    )
    assert result.summary == ""
    assert result.entries[0]["parentId"] is None
    assert result.entries[0]["data"] == {  # type: ignore[typeddict-item]
        "throughEntryId": None,
        "keepEntryIds": [],
        "strategy": "default-compaction",
        "trigger": "manual",
    }


async def test_second_compaction_carries_the_first_summary_forward() -> None:
    strategy = create_default_compaction_strategy(keep_recent_entries=2)
    entries = conversation()
    first = (
        await strategy.compact(
            CompactionContext(session_id="s1", entries=entries, redactor=NOOP_REDACTOR)
        )
    ).entries[0]  # type: ignore[arg-type]
    later = [
        first,
        msg(12, "user", text("third question"), parent=first["id"]),
        msg(13, "assistant", text("third answer")),
    ]
    second = await strategy.compact(
        CompactionContext(session_id="s1", entries=[*entries, *later], redactor=NOOP_REDACTOR)
    )  # type: ignore[list-item]
    lines = second.summary.split("\n")
    assert lines[0] == "model: mock/m1"  # the first compaction's summary comes first
    assert lines[-2:] == [
        "user: next question",
        "assistant: next answer",
    ]  # its kept messages are now older
    assert second.entries[0]["data"]["keepEntryIds"] == ["e12", "e13"]  # type: ignore[typeddict-item]
    assert second.entries[0]["data"]["throughEntryId"] == "e11"  # type: ignore[typeddict-item]


async def test_summary_is_capped_keeping_the_newest_lines() -> None:
    entries = [
        msg(i, "user" if i % 2 else "assistant", text(f"message number {i} " + "x" * 40))
        for i in range(1, 200)
    ]
    strategy = create_default_compaction_strategy(keep_recent_entries=1, max_summary_chars=500)
    result = await strategy.compact(
        CompactionContext(session_id="s1", entries=entries, redactor=NOOP_REDACTOR)
    )  # type: ignore[arg-type]
    assert len(result.summary) <= 500
    assert result.summary.startswith(TRUNCATION_MARKER + "\n")
    assert result.summary.split("\n")[1].startswith(("user: ", "assistant: "))  # whole lines only
    assert "message number 198 " in result.summary
    tiny = await strategy.compact(
        CompactionContext(
            session_id="s1", entries=entries, max_summary_chars=10, redactor=NOOP_REDACTOR
        )
    )  # type: ignore[arg-type]
    assert len(tiny.summary) == 10


async def test_secrets_are_redacted_before_the_cap() -> None:
    entries = [
        msg(1, "user", text(f"my key is {SECRET} ok")),
        msg(2, "assistant", text("noted " + SECRET)),
        {
            "id": "e3",
            "sessionId": "s1",
            "parentId": "e2",
            "kind": "label",
            "label": f"key={SECRET}",
        },
        msg(4, "user", text("other-secret-value-42 here")),
        msg(5, "assistant", text("done")),
    ]
    strategy = create_default_compaction_strategy(keep_recent_entries=1)
    redactor = create_redactor([SECRET, "other-secret-value-42"])
    result = await strategy.compact(
        CompactionContext(session_id="s1", entries=entries, redactor=redactor)  # type: ignore[arg-type]
    )
    assert SECRET not in result.summary
    assert "other-secret-value-42" not in result.summary
    assert result.summary.count("[REDACTED]") == 4
    # a cap landing inside where the secret was cannot leave part of it behind
    for cap in range(5, 60):
        capped = await strategy.compact(
            CompactionContext(
                session_id="s1", entries=entries[:2], max_summary_chars=cap, redactor=redactor
            )
        )  # type: ignore[arg-type]
        assert SECRET[:8] not in capped.summary and SECRET[-8:] not in capped.summary
    assert SECRET not in repr(strategy)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"keep_recent_entries": -1}, "keep_recent_entries"),
        ({"keep_recent_entries": True}, "keep_recent_entries"),
        ({"max_summary_chars": 0}, "max_summary_chars"),
        ({"name": ""}, "name"),
    ],
)
def test_invalid_strategy_options(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        create_default_compaction_strategy(**kwargs)
    assert "'ab'" not in str(info.value)


async def test_invalid_context_override() -> None:
    with pytest.raises(ConfigError, match="max_summary_chars"):
        await create_default_compaction_strategy().compact(
            CompactionContext(
                session_id="s1", entries=[], max_summary_chars=0, redactor=NOOP_REDACTOR
            )
        )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"throughEntryId": "e1", "keepEntryIds": ["e2"], "strategy": "s", "trigger": "manual"},
            True,
        ),
        ({"throughEntryId": None, "keepEntryIds": [], "strategy": "s", "trigger": "auto"}, True),
        ({"keepEntryIds": [], "strategy": "s", "trigger": "auto"}, False),
        ({"throughEntryId": 3, "keepEntryIds": [], "strategy": "s", "trigger": "auto"}, False),
        ({"throughEntryId": "e", "keepEntryIds": [1], "strategy": "s", "trigger": "auto"}, False),
        ({"throughEntryId": "e", "keepEntryIds": "e2", "strategy": "s", "trigger": "auto"}, False),
        ({"throughEntryId": "e", "keepEntryIds": [], "strategy": None, "trigger": "auto"}, False),
        ({"throughEntryId": "e", "keepEntryIds": [], "strategy": "s"}, False),
        (None, False),
        ([], False),
    ],
)
def test_is_compaction_entry_data(value: object, expected: bool) -> None:
    assert is_compaction_entry_data(value) is expected


async def test_rebuild_after_compaction_uses_summary_and_kept_messages() -> None:
    from prism.branching import rebuild_session_context

    entries = conversation()
    result = await create_default_compaction_strategy(keep_recent_entries=2).compact(
        CompactionContext(session_id="s1", entries=entries, redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
    )
    after = msg(12, "user", text("after compaction"), parent=result.entries[0]["id"])
    full = [*entries, *result.entries, after]
    ctx = rebuild_session_context(full, "e12")  # type: ignore[arg-type]
    assert ctx.entries == full  # the raw branch is still all there
    assert ctx.summaries[0] == result.summary
    assert [m["content"][0]["text"] for m in ctx.messages] == [  # type: ignore[typeddict-item]
        "next question",
        "next answer",
        "after compaction",
    ]
