"""RPC framing and refusal rules: LF-only lines, one trailing CR stripped,
U+2028/U+2029 kept inside strings, and every malformed request answered
``ok: false`` without executing anything (plus a hypothesis fuzz that reuses
one rpc process for all examples)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

STALL = ("--mock-delay-ms", "600000")


def test_crlf_is_one_line_and_a_lone_cr_is_not_a_break(rpc: Any) -> None:
    client = rpc()
    client.send_raw(b'{"id":"crlf","command":"state"}\r\n')
    assert client.until_response("crlf")[1]["ok"] is True
    # "\r" inside the line is JSON whitespace, not a line break
    client.send_raw(b'{"id":"cr",\r"command":"state"}\n')
    assert client.until_response("cr")[1]["ok"] is True
    # a CR-only "line ending" does not end the request: the next LF does
    client.send_raw(b'{"id":"r1","command":"state"}\r')
    client.send_raw(b'{"id":"r2","command":"state"}\n')
    _, response = client.until_response(None)
    assert response["ok"] is False and response["error"]["code"] == "invalid_json"


def test_unicode_line_separators_inside_strings_are_not_line_breaks(rpc: Any) -> None:
    client = rpc()
    text = "a\u2028b\u2029c"
    line = '{"id":"u","command":"prompt","params":{"input":"' + text + '"}}\n'
    client.send_raw(line.encode("utf-8"))
    _, response = client.until_response("u")
    assert response["ok"] is True
    assert response["result"]["text"] == f"Mock reply to: {text} (turn 1)"
    # written escaped, so even a client splitting on U+2028 sees whole lines
    assert all("\u2028".encode() not in raw for raw in client.raw)


def test_a_final_line_without_newline_is_still_answered(rpc: Any) -> None:
    client = rpc()
    client.send_raw(b'{"id":"tail","command":"state"}')
    code, rest, _ = client.close()
    assert code == 0
    assert rest[-1]["id"] == "tail" and rest[-1]["ok"] is True


def test_abort_right_after_prompt_in_the_same_write(rpc: Any) -> None:
    # The abort is read before the run can be cancelled; it must still land.
    client = rpc(*STALL)
    client.send_raw(
        b'{"id":"p","command":"prompt","params":{"input":"Hi"}}\n{"id":"a","command":"abort"}\n'
    )
    _, abort = client.until_response("a")
    assert abort["ok"] is True and abort["result"]["aborted"] is True
    _, final = client.until_response("p")
    assert final["ok"] is False and final["error"]["message"] == "Agent run aborted"


@pytest.mark.parametrize(
    ("line", "expected_id", "code"),
    [
        (b"not json", None, "invalid_json"),
        (b"", None, "invalid_json"),
        (b"\xff\xfe", None, "invalid_json"),
        (b'{"id":1,"command":"state"', None, "invalid_json"),
        (b'{"id":NaN,"command":"state"}', None, "invalid_json"),
        (b"[1,2]", None, "invalid_request"),
        (b'"state"', None, "invalid_request"),
        (b'{"command":"state"}', None, "invalid_request"),
        (b'{"id":null,"command":"state"}', None, "invalid_request"),
        (b'{"id":true,"command":"state"}', None, "invalid_request"),
        (b'{"id":{"a":1},"command":"state"}', None, "invalid_request"),
        (b'{"id":"x"}', "x", "invalid_request"),
        (b'{"id":"x","command":5}', "x", "invalid_request"),
        (b'{"id":"x","command":"rm -rf"}', "x", "unknown_command"),
        (b'{"id":"x","command":"State"}', "x", "unknown_command"),
        (b'{"id":"x","command":"state","params":[1]}', "x", "invalid_request"),
        (b'{"id":"x","command":"prompt"}', "x", "invalid_params"),
        (b'{"id":"x","command":"prompt","params":{"input":""}}', "x", "invalid_config"),
        (b'{"id":"x","command":"prompt","params":{"input":42}}', "x", "invalid_config"),
        (b'{"id":"x","command":"command","params":{"name":"shell"}}', "x", "unknown_command"),
        (b'{"id":"x","command":"command","params":{}}', "x", "invalid_params"),
        (
            b'{"id":"x","command":"command","params":{"name":"commands","args":{"a":1}}}',
            "x",
            "command_error",
        ),
        (b'{"id":"x","command":"setModel","params":{"model":""}}', "x", "invalid_params"),
        (
            b'{"id":"x","command":"setModel","params":{"model":{"provider":"openai","model":"m"}}}',
            "x",
            "invalid_params",
        ),
        (b'{"id":"x","command":"abort","params":{"reason":5}}', "x", "invalid_params"),
        (b'{"id":"x","command":"switchSession","params":{"sessionId":""}}', "x", "invalid_params"),
        (b"[" * 100_000, None, "invalid_json"),
    ],
)
def test_malformed_requests_are_refused_and_nothing_runs(
    shared_rpc: Any, line: bytes, expected_id: Any, code: str
) -> None:
    client = shared_rpc
    client.send_raw(line + b"\n")
    client.send({"id": "after", "command": "state"})
    before, state = client.until_response("after")
    assert len(before) == 1
    refused = before[0]
    assert refused["ok"] is False and refused["id"] == expected_id
    assert refused["error"]["code"] == code, refused
    assert refused["error"]["message"]
    # nothing was executed or appended
    assert state["result"]["entryCount"] == 0
    assert state["result"]["model"] == {"provider": "mock", "model": "demo"}


# --- fuzz ------------------------------------------------------------------------------

_KNOWN = [
    "prompt",
    "steer",
    "followUp",
    "abort",
    "state",
    "messages",
    "setModel",
    "compact",
    "switchSession",
    "forkSession",
    "cloneSession",
    "command",
]
_json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_bad_ids: st.SearchStrategy[Any] = (
    st.none() | st.booleans() | st.lists(_json_scalars, max_size=2) | st.just({})
)
_unknown_commands = st.text().filter(lambda c: c not in _KNOWN)
_bad_prompt_inputs: st.SearchStrategy[Any] = (
    st.none() | st.just("") | st.integers() | st.just([]) | st.booleans()
)


@st.composite
def malformed_line(draw: Any) -> bytes:
    kind = draw(st.sampled_from(["bytes", "json", "bad_id", "bad_command", "bad_params"]))
    if kind == "bytes":
        return bytes(draw(st.binary(max_size=60).filter(lambda b: b"\n" not in b)))
    if kind == "json":  # valid JSON that is not an object
        value = draw(_json_values.filter(lambda v: not isinstance(v, dict)))
        return json.dumps(value).encode()
    request: dict[str, Any] = {"command": draw(st.sampled_from(_KNOWN))}
    if kind == "bad_id":
        if draw(st.booleans()):
            request["id"] = draw(_bad_ids)
    else:
        request["id"] = draw(st.text(max_size=8) | st.integers())
    if kind == "bad_command":
        request["command"] = draw(_unknown_commands | st.integers() | st.none())
    elif kind == "bad_params":
        choice = draw(st.sampled_from(["not_object", "command", "prompt"]))
        if choice == "not_object":
            request["params"] = draw(_json_values.filter(lambda v: not isinstance(v, dict | None)))
        elif choice == "command":
            request["command"] = "command"
            name = draw(
                st.text().filter(lambda n: n not in ("commands", "flags", "session.entries"))
            )
            request["params"] = {"name": name}
        else:
            request["command"] = draw(st.sampled_from(["prompt", "followUp"]))
            request["params"] = {"input": draw(_bad_prompt_inputs)}
    text = json.dumps(request, ensure_ascii=draw(st.booleans()))
    return text.encode("utf-8")


_sentinel = iter(range(10**9))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(line=malformed_line())
def test_fuzzed_malformed_lines_get_exactly_one_refusal(shared_rpc: Any, line: bytes) -> None:
    sentinel = f"sentinel-{next(_sentinel)}"
    shared_rpc.send_raw(line + b"\n")
    shared_rpc.send({"id": sentinel, "command": "state"})
    before, state = shared_rpc.until_response(sentinel)
    assert len(before) == 1, (line, before)
    assert before[0]["ok"] is False, (line, before)
    assert set(before[0]) == {"id", "ok", "error"}
    assert shared_rpc.proc.poll() is None
    assert state["result"]["entryCount"] == 0  # nothing executed
    assert state["result"]["activeRuns"] == []


def test_an_oversized_line_is_refused_and_skipped(rpc: Any) -> None:
    client = rpc()
    client.send_raw(b'{"id":"big","pad":"' + b"x" * (16 * 1024 * 1024) + b'"}\n')
    client.send({"id": "next", "command": "state"})
    before, state = client.until_response("next")
    assert len(before) == 1
    assert before[0]["id"] is None and before[0]["ok"] is False
    assert "exceeds" in before[0]["error"]["message"]
    assert state["ok"] is True
