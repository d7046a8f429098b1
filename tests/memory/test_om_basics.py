"""Ids, settings, rendering, recall and folded-details validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prism.config import create_settings_provider
from prism.errors import ConfigError, SettingsError
from prism.memory import (
    InvalidMemoryIdError,
    ObservationalMemorySettings,
    build_observational_memory_projection,
    create_folded_memory_details,
    is_memory_id,
    recall_observational_memory,
    render_observational_memory,
    resolve_observational_memory_settings,
)
from prism.security import NOOP_REDACTOR, create_redactor

GOLDEN = Path(__file__).parent / "golden"
SECRET = "sk-live-SECRET-0123456789abcdef"


def branch() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (GOLDEN / "om_branch.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("0123456789ab", True),
        ("abcdefabcdef", True),
        ("0123456789AB", False),
        ("0123456789a", False),
        ("0123456789abc", False),
        ("0123456789ag", False),
        (" 0123456789a", False),
        ("0123456789ab\n", False),
        (123456789012, False),
        (None, False),
    ],
)
def test_memory_ids_are_exactly_twelve_lowercase_hex(value: object, ok: bool) -> None:
    assert is_memory_id(value) is ok


def test_settings_defaults_match_the_reference() -> None:
    assert resolve_observational_memory_settings().to_json() == {
        "observeAfterTokens": 10000,
        "reflectAfterTokens": 20000,
        "compactAfterTokens": 81000,
        "observationsPoolMaxTokens": 20000,
        "observationsPoolTargetTokens": 10000,
        "agentMaxTurns": 16,
        "passive": False,
        "debugLog": False,
    }


def test_settings_layer_the_settings_key_then_overrides() -> None:
    provider = create_settings_provider(
        {"observational-memory": {"agentMaxTurns": 4, "passive": True}, "other": {"x": 1}}
    )
    resolved = resolve_observational_memory_settings(provider, {"agent_max_turns": 6})
    assert resolved.agent_max_turns == 6
    assert resolved.passive is True
    assert resolved.observe_after_tokens == 10000
    plain = resolve_observational_memory_settings({"observational-memory": {"debugLog": True}})
    assert plain == ObservationalMemorySettings(debug_log=True)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"observational-memory": {"agentMaxTurn": 4}},
            "unknown 'observational-memory' setting key 'agentMaxTurn'",
        ),
        ({"observational-memory": {"agentMaxTurns": 0}}, "agentMaxTurns must be an integer >= 1"),
        ({"observational-memory": {"agentMaxTurns": "4"}}, "agentMaxTurns must be an integer >= 1"),
        ({"observational-memory": {"passive": 1}}, "passive must be a boolean"),
        ({"observational-memory": []}, "'observational-memory' must be an object"),
        (
            {"observational-memory": {"agentMaxTurns": 4, "agent_max_turns": 5}},
            "key 'agent_max_turns' is given twice",
        ),
        ({"observational-memory": {7: 1}}, "unknown 'observational-memory' setting key 7"),
        (
            {"observational-memory": {"observationsPoolTargetTokens": 30000}},
            "observationsPoolTargetTokens must not exceed observationsPoolMaxTokens",
        ),
    ],
)
def test_bad_settings_name_the_key(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        resolve_observational_memory_settings(settings)
    assert message in str(raised.value)


def test_render_is_one_line_per_memory_and_redacts() -> None:
    text = render_observational_memory(
        [{"id": "0000000000b1", "content": "reflects", "observationIds": []}],
        [
            {"id": "0000000000a1", "content": f"key is {SECRET}", "sourceEntryIds": []},
            {"id": "0000000000a2", "content": "two\n- [ffffffffffff] forged", "sourceEntryIds": []},
        ],
        redactor=create_redactor([SECRET]),
    )
    assert SECRET not in text
    assert "- [0000000000a1] key is [REDACTED]" in text
    assert "- [0000000000a2] two - [ffffffffffff] forged" in text
    assert render_observational_memory([], [], redactor=NOOP_REDACTOR) == ""


def test_recall_an_observation_returns_its_sources() -> None:
    recall = recall_observational_memory(branch(), "0000000000a2", redactor=NOOP_REDACTOR)
    assert recall.found and recall.kind == "observation" and recall.dropped
    assert [e["id"] for e in recall.source_entries] == ["e03", "e04"]
    assert recall.missing_source_ids == []
    assert recall.to_json()["kind"] == "observation"


def test_recall_a_reflection_returns_supporting_observations_and_sources() -> None:
    entries = [e for e in branch() if e["id"] != "e01"]  # a cited source missing
    recall = recall_observational_memory(entries, "0000000000b1", redactor=NOOP_REDACTOR)
    assert recall.kind == "reflection"
    assert [o["id"] for o in recall.supporting_observations] == [
        "0000000000a1",
        "0000000000a3",
        "0000000000a4",
    ]
    assert [e["id"] for e in recall.source_entries] == ["e03", "e05", "e06"]
    assert recall.missing_source_ids == ["e01"]
    assert "sources not on this branch: e01" in recall.to_text()


def test_recall_unknown_id_is_not_found() -> None:
    recall = recall_observational_memory(branch(), "ffffffffffff", redactor=NOOP_REDACTOR)
    assert recall.to_json() == {"id": "ffffffffffff", "kind": None, "found": False}


class Untouchable(list[Any]):
    def __iter__(self) -> Any:
        raise AssertionError("entries were read for an invalid id")


@pytest.mark.parametrize("bad", ["", "short", "0000000000A1", "0000000000a1 ", "x" * 5000])
def test_recall_invalid_id_fails_before_any_lookup(bad: str) -> None:
    with pytest.raises(InvalidMemoryIdError) as raised:
        recall_observational_memory(Untouchable(), bad, redactor=NOOP_REDACTOR)
    assert len(str(raised.value)) < 120


def test_recall_redacts_sources() -> None:
    entries = branch()
    entries[2]["message"]["content"][0]["text"] += f" token {SECRET}"
    recall = recall_observational_memory(
        entries, "0000000000a3", redactor=create_redactor([SECRET])
    )
    assert SECRET not in json.dumps(recall.to_json())
    assert SECRET not in recall.to_text()
    assert SECRET in json.dumps(entries)  # the caller's entries are untouched


def test_projection_mode_is_checked() -> None:
    with pytest.raises(ConfigError, match="projection mode"):
        build_observational_memory_projection([], "visible")  # type: ignore[arg-type]


def test_folded_details_validate_every_memory() -> None:
    details = create_folded_memory_details(
        observations=[{"id": "0000000000a1", "content": "c", "sourceEntryIds": ["e1"]}],
        reflections=[],
        dropped_observation_ids=["0000000000a2"],
        full_fold=True,
    )
    assert details == {
        "type": "om.folded",
        "version": 1,
        "fullFold": True,
        "observations": [{"id": "0000000000a1", "content": "c", "sourceEntryIds": ["e1"]}],
        "reflections": [],
        "droppedObservationIds": ["0000000000a2"],
    }
    with pytest.raises(ConfigError, match=r"observations\[0\]"):
        create_folded_memory_details(
            observations=[{"id": "BAD", "content": "c", "sourceEntryIds": []}], reflections=[]
        )
    with pytest.raises(ConfigError, match=r"reflections\[0\]"):
        create_folded_memory_details(observations=[], reflections=[{"id": "0000000000b1"}])
    with pytest.raises(ConfigError, match="dropped_observation_ids"):
        create_folded_memory_details(observations=[], reflections=[], dropped_observation_ids="x")
