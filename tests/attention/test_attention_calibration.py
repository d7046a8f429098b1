"""The self-calibrating token estimate: learning per kind, a changing mix,
bounded memory, persistence in a real session store, and bad input."""

from __future__ import annotations

from typing import Any

import pytest

from prism.attention.calibration import (
    CALIBRATION_ENTRY,
    TokenCalibration,
    TokenSplit,
    split_request_tokens,
)
from prism.middleware import create_middleware_registry
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_thinking_delta,
    provider_usage,
)
from prism.runtime import create_agent
from prism.stores import create_memory_session_store

TRUE = {"prose": 0.85, "code": 1.45, "tool": 1.3}


def billed(split: TokenSplit) -> int:
    return (
        round(TRUE["prose"] * split.prose + TRUE["code"] * split.code + TRUE["tool"] * split.tool)
        + split.fixed
    )


def test_three_turns_with_varying_mix_get_within_five_percent() -> None:
    calibration = TokenCalibration()
    turns = [
        TokenSplit(6000, 1500, 2000, 40),
        TokenSplit(6500, 2500, 9000, 60),
        TokenSplit(7000, 2600, 16000, 80),
    ]
    for split in turns:
        calibration.observe("m", split, billed(split))
    later = TokenSplit(7400, 3000, 24000, 100)
    error = abs(calibration.estimate("m", later) - billed(later)) / billed(later)
    plain = abs(later.total - billed(later)) / billed(later)
    assert error < 0.05 < plain


def test_a_compaction_that_changes_the_mix_stays_calibrated() -> None:
    calibration = TokenCalibration()
    for i in range(8):
        split = TokenSplit(5000 + 500 * i, 1000 + 800 * i, 2000 + 4000 * i, 50 + 10 * i)
        calibration.observe("m", split, billed(split))
    compacted = TokenSplit(9000, 400, 1500, 12)  # mostly a prose summary now
    assert abs(calibration.estimate("m", compacted) - billed(compacted)) / billed(compacted) < 0.05


def test_unknown_model_uses_the_plain_estimate_and_models_are_bounded() -> None:
    calibration = TokenCalibration(max_models=2)
    split = TokenSplit(100, 100, 100, 4)
    assert calibration.estimate("never-seen", split) == split.total
    for name in ("a", "b", "c"):
        calibration.observe(name, split, 500)
    assert set(calibration.to_json()["models"]) == {"b", "c"}


@pytest.mark.parametrize("reported", [0, 3, -5])
def test_reports_that_cannot_be_right_are_ignored(reported: int) -> None:
    calibration = TokenCalibration()
    calibration.observe("m", TokenSplit(100, 0, 0, 4), reported)
    assert calibration.snapshot("m")["turns"] == 0
    assert calibration.ratios("m") == {"prose": 1.0, "code": 1.0, "tool": 1.0}


def test_ratios_are_clamped() -> None:
    calibration = TokenCalibration()
    for _ in range(5):
        calibration.observe("m", TokenSplit(100, 0, 0, 0), 100_000)
    assert calibration.ratios("m")["prose"] == 4.0


def test_json_round_trip_and_malformed_entries_are_dropped() -> None:
    calibration = TokenCalibration()
    split = TokenSplit(1000, 500, 2000, 20)
    calibration.observe("m", split, billed(split))
    data = calibration.to_json()
    data["models"]["broken"] = {"r": [1, "x", 1], "p": [], "turns": 1}
    restored = TokenCalibration.from_json(data)
    assert restored.ratios("m") == calibration.ratios("m")
    assert set(restored.to_json()["models"]) == {"m"}
    assert TokenCalibration.from_json("garbage").to_json()["models"] == {}


def test_split_counts_each_kind() -> None:
    request = {
        "model": {"provider": "p", "model": "m"},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "x" * 400}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_call", "id": "c", "name": "f", "arguments": {"a": "y" * 400}}
                ],
            },
            {
                "role": "tool",
                "content": [
                    {"type": "tool_result", "toolCallId": "c", "name": "f", "result": "z" * 800}
                ],
            },
        ],
    }
    split = split_request_tokens(request)
    assert split.prose == 100
    assert 100 < split.code < 110
    assert 200 < split.tool < 210
    assert split.fixed == 12


@pytest.mark.anyio
async def test_session_learns_persists_and_a_resumed_session_starts_calibrated() -> None:
    def script(request: dict[str, Any]) -> list[Any]:
        split = split_request_tokens(request)
        return [
            provider_text_delta("ok"),
            provider_usage(input_tokens=billed(split), output_tokens=2),
            provider_done("stop"),
        ]

    store = create_memory_session_store()
    calibration = TokenCalibration()
    updates: list[dict[str, Any]] = []
    calibration.on_update = updates.append
    middleware = create_middleware_registry()
    middleware.use("provider_request", calibration.provider_request_middleware)
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=create_mock_provider(script),
        middleware=middleware,
        store=store,
    )
    session = agent.create_session(id="calibrated")
    session.subscribe(calibration.listener)
    for i in range(3):
        await session.run(("hello " * 50) + str(i))
    assert [u["turns"] for u in updates] == [1, 2, 3]
    assert "hello" not in str(updates)  # counts only, never text
    await calibration.persist(session)

    resumed = create_agent(
        model={"provider": "mock", "model": "m"}, provider=create_mock_provider(script), store=store
    )
    resumed_session = resumed.create_session(id="calibrated")
    entries = await resumed_session.entries()
    fresh = TokenCalibration()
    await fresh.attach(resumed_session)
    assert fresh.snapshot("mock/m") == calibration.snapshot("mock/m")
    assert any(e.get("customType") == CALIBRATION_ENTRY for e in entries)
    restored = TokenCalibration.from_entries(entries)
    assert restored.snapshot("mock/m") == calibration.snapshot("mock/m")
    assert restored.snapshot("mock/m")["turns"] == 3


def test_a_long_unchanging_mix_does_not_wind_up() -> None:
    calibration = TokenCalibration()
    split = TokenSplit(5000, 1000, 3000, 40)
    for _ in range(500):
        calibration.observe("m", split, billed(split))
    state = calibration.to_json()["models"]["m"]
    assert max(state["p"][0], state["p"][3], state["p"][5]) <= 100.0
    changed = TokenSplit(9000, 300, 500, 10)
    assert abs(calibration.estimate("m", changed) - billed(changed)) / billed(changed) < 0.25


@pytest.mark.anyio
async def test_attached_calibration_makes_the_gate_trip_where_the_provider_count_is() -> None:
    """The provider bills 1.6x the plain estimate: uncalibrated, the gate
    never trips on this session; calibrated, it does (its cap is divided by
    the learned scale)."""

    def script(request: dict[str, Any]) -> list[Any]:
        billed_tokens = round(split_request_tokens(request).total * 1.6)
        return [
            provider_thinking_delta("thought " * 400),
            provider_text_delta("ok"),
            provider_usage(input_tokens=billed_tokens, output_tokens=2),
            provider_done("stop"),
        ]

    async def trips(calibrated: bool) -> list[dict[str, Any]]:
        calibration = TokenCalibration()
        middleware = create_middleware_registry()
        middleware.use("provider_request", calibration.provider_request_middleware)
        agent = create_agent(
            model={
                "provider": "mock",
                "model": "m",
                "limits": {"contextWindow": 20_000, "maxOutputTokens": 1_000},
            },
            provider=create_mock_provider(script),
            middleware=middleware,
            attention_compiler={"reserveTokens": 0, "thinkingKeepTurns": 0},
        )
        session = agent.create_session()
        if calibrated:
            await calibration.attach(session)
        compiled: list[dict[str, Any]] = []
        session.subscribe(
            lambda e: compiled.append(e) if e["type"] == "attention_compiled" else None
        )
        for i in range(10):
            await session.run(f"turn {i} " + "word " * 240)
        return compiled

    assert await trips(calibrated=False) == []
    events = await trips(calibrated=True)
    assert events
    # The event says the gate ran calibrated, and by how much.
    assert 1.5 < events[0]["tokenScale"] < 1.7
    assert events[0]["inputCap"] < 19_000
