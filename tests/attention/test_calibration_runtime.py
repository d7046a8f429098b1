"""An agent's ``token_calibration``: learned from every turn, reported as a
typed event, used by every budget decision (compaction trigger, LLM cut
point, observational memory's pool thresholds), and kept in a file so a new
process starts calibrated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prism.attention.calibration import TokenCalibration, TokenSplit, split_request_tokens
from prism.compaction import CompactionContext
from prism.compaction.llm import prepare_llm_compaction
from prism.errors import ConfigError
from prism.providers import create_mock_provider, provider_done, provider_text_delta, provider_usage
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR

MODEL = {
    "provider": "mock",
    "model": "m",
    "limits": {"contextWindow": 4000, "maxOutputTokens": 100},
}


def billing(factor: float) -> Any:
    """A provider that bills ``factor`` times Prism's plain estimate."""

    def script(request: dict[str, Any]) -> list[Any]:
        reported = round(split_request_tokens(request).total * factor)
        return [
            provider_text_delta("ok"),
            provider_usage(input_tokens=reported, output_tokens=1),
            provider_done("stop"),
        ]

    return create_mock_provider(script)


@pytest.mark.anyio
async def test_each_turn_teaches_the_calibration_and_emits_a_counts_only_event() -> None:
    calibration = TokenCalibration()
    agent = create_agent(model=MODEL, provider=billing(2.0), token_calibration=calibration)
    session = agent.create_session()
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    for _ in range(3):
        await session.run("secret words " * 40)
    calibrated = [e for e in events if e["type"] == "tokens_calibrated"]
    assert [e["turns"] for e in calibrated] == [1, 2, 3]
    last = calibrated[-1]
    assert last["model"] == "mock/m" and last["reportedTokens"] > last["estimatedTokens"]
    assert 1.6 < last["scale"] < 2.2 and set(last["ratios"]) == {"prose", "code", "tool"}
    assert "secret" not in json.dumps(calibrated)  # counts only, never text
    assert calibration.scale("mock/m") == pytest.approx(last["scale"], abs=1e-3)


@pytest.mark.anyio
async def test_the_compaction_trigger_counts_in_the_providers_tokens() -> None:
    # 0.5 of the model's 2876-token input cap is 1438: four runs of ~300
    # plain tokens stay below it, but the provider bills twice that, so a
    # calibrated agent compacts before the fourth run.
    compaction = {"trigger": {"type": "input_ratio", "ratio": 0.5}, "keepRecentEntries": 1}

    async def compactions(calibration: TokenCalibration | None) -> int:
        agent = create_agent(
            model=MODEL, provider=billing(2.0), compaction=compaction,
            token_calibration=calibration,
        )  # fmt: skip
        session = agent.create_session()
        events: list[dict[str, Any]] = []
        session.subscribe(events.append)
        for _ in range(4):
            await session.run("word " * 240)
        return sum(e["type"] == "compaction_finished" for e in events)

    assert await compactions(None) == 0
    assert await compactions(TokenCalibration()) >= 1


def _branch(turns: int) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for _ in range(turns):
        for role in ("user", "assistant"):
            entries.append(
                {
                    "id": f"e{len(entries)}",
                    "sessionId": "s",
                    "parentId": entries[-1]["id"] if entries else None,
                    "kind": "message",
                    "timestamp": "2026-01-01T00:00:00Z",
                    "message": {"role": role, "content": [{"type": "text", "text": "x" * 400}]},
                }
            )
    return entries


def test_the_llm_cut_point_keeps_the_budget_in_the_providers_tokens() -> None:
    entries = _branch(10)  # about 104 plain tokens per entry

    def kept(scale: float) -> int:
        context = CompactionContext(
            session_id="s", entries=entries, redactor=NOOP_REDACTOR, token_scale=scale
        )
        return len(prepare_llm_compaction(context, keep_recent_tokens=800).kept_entries)

    assert kept(2.0) < kept(1.0)
    with pytest.raises(ConfigError, match="token_scale must be a positive number"):
        CompactionContext(session_id="s", entries=entries, redactor=NOOP_REDACTOR, token_scale=0)


def test_calibration_persists_to_a_file_and_a_new_process_starts_calibrated(
    tmp_path: Path,
) -> None:
    path = tmp_path / "calibration.json"
    first = TokenCalibration(path=path)
    for i in range(3):
        split = TokenSplit(3000 + 100 * i, 1000, 500, 20)
        first.observe("anthropic/claude", split, round(split.total * 1.3))
    second = TokenCalibration(path=path)  # what a new process does
    assert second.snapshot("anthropic/claude") == first.snapshot("anthropic/claude")
    assert second.scale("anthropic/claude") == pytest.approx(1.3, rel=0.1)
    assert TokenCalibration().scale("anthropic/claude") == 1.0


@pytest.mark.parametrize("content", ["{not json", '{"version": 9, "models": {}}', "[]"])
def test_a_damaged_calibration_file_is_a_clear_error_and_is_left_alone(
    tmp_path: Path, content: str
) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"calibration\.json.*fix or delete it"):
        TokenCalibration(path=path)
    assert path.read_text(encoding="utf-8") == content


def test_an_agent_refuses_anything_but_a_calibration() -> None:
    with pytest.raises(ConfigError, match="token_calibration must be"):
        create_agent(model=MODEL, provider=billing(1.0), token_calibration={"ratios": 1})


def _observed_branch(count: int) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    parent = None
    for i in range(count):
        text = {"type": "text", "text": f"m{i}"}
        entries.append(
            {"id": f"m{i}", "sessionId": "s", "parentId": parent, "kind": "message",
             "message": {"role": "user", "content": [text]}}
        )  # fmt: skip
        observation = {"id": f"{i:012x}", "content": "x" * 40, "sourceEntryIds": [f"m{i}"]}
        entries.append(
            {"id": f"r{i}", "sessionId": "s", "parentId": f"m{i}", "kind": "custom",
             "customType": "om.observations.recorded",
             "data": {"type": "om.observations.recorded", "observations": [observation]}}
        )  # fmt: skip
        parent = f"r{i}"
    return entries


@pytest.mark.anyio
async def test_observational_memory_thresholds_count_in_the_providers_tokens() -> None:
    from prism.memory import create_observational_memory_compaction_strategy

    # Four observations of 10 plain tokens: 40 fits a pool of 50, but billed
    # at 2x they are 80, so a calibrated compaction folds down to the target.
    strategy = create_observational_memory_compaction_strategy(
        keep_recent_entries=1,
        overrides={"observationsPoolMaxTokens": 50, "observationsPoolTargetTokens": 30},
    )

    async def memory(scale: float) -> dict[str, Any]:
        context = CompactionContext(
            session_id="s", entries=_observed_branch(4), redactor=NOOP_REDACTOR, token_scale=scale
        )
        (entry,) = (await strategy.compact(context)).entries
        return entry["data"]["memory"]  # type: ignore[no-any-return]

    assert (await memory(1.0))["fullFold"] is False
    folded = await memory(2.0)
    assert folded["fullFold"] is True
    assert len(folded["observations"]) == 1  # 30 billed tokens: one 20-token observation
