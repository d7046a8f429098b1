"""``prism --compaction llm``: the session's provider writes the summaries
(``--summary-model`` picks another model); config files can name it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def usage_error(result: Any, fragment: str) -> None:
    assert result.returncode == 2, result
    err = result.stderr.decode()
    assert err.startswith("prism: error: ") and err.count("\n") == 1, err
    assert fragment in err, err


def stored(prism_home: Path) -> list[dict[str, Any]]:
    lines = (prism_home / "sessions.jsonl").read_bytes().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--compaction", "smart"], "--compaction must be default or llm"),
        (["--summary-model", "cheap"], "--summary-model only applies to --compaction llm"),
        (["--compaction", "llm", "--summary-model", " "], "--summary-model must not be empty"),
    ],
)
def test_bad_compaction_flags_are_usage_errors(
    prism_run: Any, args: list[str], fragment: str
) -> None:
    usage_error(prism_run(*args, "-p", "hi"), fragment)


def test_llm_compaction_writes_a_model_summary(prism_run: Any, prism_home: Path) -> None:
    flags = ["--session", "long", "--compact", "4", "--compaction", "llm"]
    for n in range(4):
        result = prism_run(*flags, "--summary-model", "cheap", "-p", f"message {n}")
        assert result.returncode == 0, result.stderr
    compactions = [e for e in stored(prism_home) if e["kind"] == "compaction"]
    assert compactions, "no compaction was appended"
    entry = compactions[0]
    assert entry["data"]["strategy"] == "llm-compaction" and entry["data"]["trigger"] == "auto"
    assert entry["data"]["firstKeptEntryId"] in entry["data"]["keepEntryIds"]
    # The echo mock answered the summary request: its prompt was the transcript.
    assert entry["summary"].startswith("Mock reply to: <conversation>")
    assert "[User]: message 0" in entry["summary"]


def test_a_config_file_names_the_strategy(prism_run: Any, prism_home: Path, tmp_path: Path) -> None:
    config = tmp_path / "prism.json"
    config.write_text(json.dumps({"compaction": "llm-compaction", "compact": 3}))
    for n in range(3):
        result = prism_run("--config", str(config), "--session", "c", "-p", f"turn {n}")
        assert result.returncode == 0, result.stderr
    strategies = {e["data"]["strategy"] for e in stored(prism_home) if e["kind"] == "compaction"}
    assert strategies == {"llm-compaction"}


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"compaction": 1}, "compaction"),
        ({"compaction": "default", "summaryModel": "x"}, "--summary-model"),
    ],
)
def test_config_compaction_values_are_validated(
    prism_run: Any, tmp_path: Path, config: dict[str, Any], fragment: str
) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config))
    usage_error(prism_run("--config", str(path), "-p", "hi"), fragment)


def test_rpc_compact_uses_the_llm_strategy(rpc: Any) -> None:
    client = rpc("--compaction", "llm")
    for n in range(3):
        client.send({"id": f"p{n}", "command": "prompt", "params": {"input": f"turn {n}"}})
        client.until_response(f"p{n}")
    response = client.request({"id": "k", "command": "compact"})
    assert response["ok"] is True, response
    assert response["result"]["summary"].startswith("Mock reply to: <conversation>")
