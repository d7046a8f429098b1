"""RPC responses never echo a known secret, whatever the client or the command
line put in them (issue 11): unknown command names, recorded flags, bad params."""

from __future__ import annotations

import json
from typing import Any

import pytest

CANARY = "sk-rpc-canary-'quoted\"-0123456789"


@pytest.fixture
def client(rpc: Any, cli_env: dict[str, str]) -> Any:
    # A preset provider with a key: the CLI configures the agent's redactor
    # from it. Nothing is sent to the network by these requests.
    cli_env["OPENAI_API_KEY"] = CANARY
    started = rpc("--provider", "openai", "--resource", f"https://h.example/{CANARY}/x")
    yield started


def _assert_clean(client: Any, response: dict[str, Any]) -> None:
    text = json.dumps(response, ensure_ascii=False) + json.dumps(response)
    assert "quoted" not in text, response
    assert "sk-rpc-canary" not in text, response


def test_recorded_flags_are_redacted(client: Any) -> None:
    response = client.request({"id": 1, "command": "command", "params": {"name": "flags"}})
    assert response["ok"] is True
    assert response["result"]["resources"] == ["https://h.example/[REDACTED]/x"]
    _assert_clean(client, response)


@pytest.mark.parametrize("offset", [0, 1, 50, 80, 90, 95, 99, 100, 101])
def test_unknown_command_names_are_redacted_then_clipped(client: Any, offset: int) -> None:
    # The name is clipped to 100 characters: the secret straddles that cut
    # at several offsets, and its prefix must not survive either.
    name = "n" * offset + CANARY + "tail"
    response = client.request({"id": 2, "command": "command", "params": {"name": name}})
    assert response["ok"] is False and response["error"]["code"] == "unknown_command"
    _assert_clean(client, response)
    unknown = client.request({"id": 3, "command": CANARY})
    assert unknown["ok"] is False
    _assert_clean(client, unknown)


def test_params_quoting_a_secret_are_redacted(client: Any) -> None:
    # Accepted (a custom model name) or refused, the answer echoes no secret.
    accepted = client.request({"id": 4, "command": "setModel", "params": {"model": CANARY}})
    _assert_clean(client, accepted)
    refused = client.request({"id": 5, "command": "setModel", "params": {"model": [CANARY]}})
    assert refused["ok"] is False
    _assert_clean(client, refused)
    state = client.request({"id": 6, "command": "state"})
    _assert_clean(client, state)
