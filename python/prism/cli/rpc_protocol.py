"""RPC framing rules: parse one request line, build response/event envelopes.

Pure functions, no I/O, so every malformed-input rule is cheap to test and
the server never executes anything before a request passed all of them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from prism.contracts import AgentEvent, ErrorInfo

RequestId: TypeAlias = str | int | float

RPC_COMMANDS: Final[tuple[str, ...]] = (
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
    "approvals",
    "approve",
    "deny",
)


@dataclass(frozen=True, slots=True)
class RpcRequest:
    id: RequestId
    command: str
    params: dict[str, Any]


class RpcRequestError(Exception):
    """A request line that must be refused; ``request_id`` is the id to echo
    (None when the line had no usable id)."""

    def __init__(self, request_id: RequestId | None, info: ErrorInfo) -> None:
        super().__init__(info["message"])
        self.request_id = request_id
        self.info = info


def error_info(message: str, code: str) -> ErrorInfo:
    return {"message": message, "code": code}


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        return True
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _reject_constant(name: str) -> Any:
    # json.loads accepts NaN/Infinity by default; they are not JSON.
    raise ValueError(f"{name} is not valid JSON")


def parse_request(line: bytes) -> RpcRequest:
    """Validate one line (terminator already stripped) into a request.

    Order matters: an id is echoed back only once the line is known to be a
    JSON object with a valid id, so a broken line answers with ``id: null``.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise RpcRequestError(
            None, error_info("request is not valid UTF-8", "invalid_json")
        ) from None
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise RpcRequestError(None, error_info(f"invalid JSON: {reason}", "invalid_json")) from None
    if not isinstance(value, dict):
        raise RpcRequestError(None, error_info("request must be a JSON object", "invalid_request"))
    if "id" not in value or value["id"] is None:
        raise RpcRequestError(None, error_info("request has no id", "invalid_request"))
    request_id = value["id"]
    if not _valid_id(request_id):
        raise RpcRequestError(
            None, error_info("request id must be a string or a number", "invalid_request")
        )
    command = value.get("command")
    if not isinstance(command, str):
        raise RpcRequestError(
            request_id, error_info("request command must be a string", "invalid_request")
        )
    if command not in RPC_COMMANDS:
        raise RpcRequestError(
            request_id, error_info(f"unknown command: {command[:100]!r}", "unknown_command")
        )
    params = value.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcRequestError(
            request_id, error_info("request params must be a JSON object", "invalid_request")
        )
    return RpcRequest(request_id, command, params)


def ok_response(request_id: RequestId, result: Any) -> dict[str, Any]:
    return {"id": request_id, "ok": True, "result": result}


def error_response(request_id: RequestId | None, info: ErrorInfo) -> dict[str, Any]:
    return {"id": request_id, "ok": False, "error": info}


def event_envelope(request_id: RequestId | None, event: AgentEvent) -> dict[str, Any]:
    """RPC events carry the originating prompt's id; json mode passes None
    and the envelope has no id key."""
    envelope: dict[str, Any] = {"type": "event"}
    if request_id is not None:
        envelope["id"] = request_id
    if "sessionId" in event:
        envelope["sessionId"] = event["sessionId"]
    if "runId" in event:
        envelope["runId"] = event["runId"]
    envelope["event"] = event
    return envelope
