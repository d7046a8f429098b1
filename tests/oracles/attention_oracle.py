"""Pure-Python reference of the attention pass (``_native.attention_plan``).

Same measurement rules and the same planning order, written for clarity, not
speed: the hypothesis tests check native == oracle and the speed bench uses
it as the same-run baseline. Not used by the product.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 1000
STUB_FIXED_CHARS = 12 + 2 + 11 + 15 + 32 + 1
APPROVAL_KEYS = (
    "approval",
    "approvalId",
    "prismApproval",
    "decision",
    "decisions",
    "pendingDecisions",
    "elicitation",
)


def ceil4(n: int) -> int:
    return -(-n // 4)


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def json_size(value: Any) -> tuple[int, int]:
    text = dumps(value)
    return len(text), len(text.encode("utf-8", "surrogatepass"))


def _escaped(s: str) -> int:
    return len(json.dumps(s, ensure_ascii=False)) - 2


def text_chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if value is None:
        return 0
    return json_size(value)[0]


def _approval(meta: Any) -> bool:
    return isinstance(meta, dict) and any(key in meta for key in APPROVAL_KEYS)


def _str_field(block: dict[str, Any], key: str) -> str:
    value = block.get(key)
    if value is None and key not in block:
        return ""
    return value if isinstance(value, str) else str(value)


def measure_message(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise TypeError("not a message dict")
    assistant = message.get("role") == "assistant"
    m: dict[str, Any] = {
        "tokens": MESSAGE_OVERHEAD,
        "thinking": 0,
        "has_thinking": False,
        "tools": [],
    }
    if "content" not in message:
        return m
    content = message["content"]
    if isinstance(content, str):
        m["tokens"] += ceil4(len(content))
        return m
    if not isinstance(content, list):
        raise TypeError("content is not a list")
    message_approval = _approval(message.get("metadata"))
    for b, block in enumerate(content):
        if not isinstance(block, dict):
            m["tokens"] += ceil4(json_size(block)[0])
            continue
        kind = block.get("type")
        if kind == "text":
            m["tokens"] += ceil4(text_chars(block.get("text")))
        elif kind == "thinking":
            t = ceil4(text_chars(block.get("text")))
            m["tokens"] += t
            if assistant:
                m["thinking"] += t
                m["has_thinking"] = True
        elif kind == "image":
            m["tokens"] += IMAGE_TOKENS
        elif kind == "tool_call":
            args = json_size(block["arguments"])[0] if "arguments" in block else 0
            m["tokens"] += ceil4(text_chars(block.get("name")) + args)
        elif kind == "tool_result":
            name = _str_field(block, "name")
            call_id = _str_field(block, "toolCallId")
            chars, nbytes = json_size(block["result"]) if "result" in block else (4, 4)
            payload_tokens = ceil4(len(name) + chars)
            m["tokens"] += payload_tokens
            m["tools"].append(
                {
                    "block": b,
                    "name": name,
                    "id": call_id,
                    "payload_tokens": payload_tokens,
                    "payload_bytes": nbytes,
                    "name_chars": len(name),
                    "var_chars": _escaped(name) + _escaped(call_id),
                    "var_bytes": len(name.encode()) + len(call_id.encode()),
                    "protected": bool(block.get("isError"))
                    or message_approval
                    or _approval(block.get("metadata")),
                }
            )
        else:
            m["tokens"] += ceil4(json_size(block)[0])
    return m


def thinking_key(message: dict[str, Any]) -> str:
    if isinstance(message.get("id"), str):
        return message["id"]
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_call"
                and isinstance(block.get("id"), str)
                and block["id"]
            ):
                return "call:" + block["id"]
        for block in content:
            if isinstance(block, dict) and block.get("type") == "thinking":
                sig = block.get("signature")
                source = sig if sig else block.get("text", "")
                digest = hashlib.sha256(str(source).encode("utf-8", "surrogatepass")).hexdigest()
                return "sha256:" + digest[:32]
    return ""


def _digits(n: int) -> int:
    return len(str(n))


def plan(
    groups: Sequence[Sequence[Any]],
    mutable: Sequence[bool],
    extras: Sequence[Sequence[Any]],
    cap: int,
    trigger_ratio: float,
    target_ratio: float | None,
    thinking_keep_turns: int,
    keep_last: int,
    exclude_tools: Sequence[str],
    sticky_thinking: Any = None,
    sticky_ids: Any = None,
    redactor: Any = None,
) -> dict[str, Any]:
    used = 0
    turns: list[tuple[int, int, dict[str, Any], dict[str, Any]]] = []
    tools: list[tuple[int, int, dict[str, Any], dict[str, Any]]] = []
    for g, group in enumerate(groups):
        for r, message in enumerate(group):
            m = measure_message(message)
            used += m["tokens"]
            if not mutable[g]:
                continue
            if m["has_thinking"]:
                turns.append((g, r, message, m))
            for t in m["tools"]:
                tools.append((g, r, message, t))
    for extra in extras:
        for value in extra:
            used += ceil4(json_size(value)[0])

    def payload(j: int) -> Any:
        _, _, message, t = tools[j]
        value = message["content"][t["block"]].get("result")
        return redactor.redact_value(value) if redactor is not None else value

    def nbytes(j: int) -> int:
        if redactor is None:
            return int(tools[j][3]["payload_bytes"])
        return json_size(payload(j))[1]

    def stub_tokens(t: dict[str, Any], b: int) -> int:
        return ceil4(t["name_chars"] + 2 + STUB_FIXED_CHARS + t["var_chars"] + _digits(b))

    def saving(j: int) -> tuple[int, int] | None:
        t = tools[j][3]
        b = nbytes(j)
        stub = stub_tokens(t, b)
        return (t["payload_tokens"] - stub, b) if stub < t["payload_tokens"] else None

    excluded = set(exclude_tools)
    protected = [t["protected"] or t["name"] in excluded for (_, _, _, t) in tools]
    sticky_t = [
        bool(sticky_thinking) and thinking_key(msg) in sticky_thinking for (_, _, msg, _) in turns
    ]
    sticky_s = [bool(sticky_ids) and bool(t["id"]) and t["id"] in sticky_ids for (*_, t) in tools]

    est = used
    strip: list[int] = []
    stub: list[tuple[int, int]] = []
    stubbed = [False] * len(tools)
    stripped = [False] * len(turns)
    stubbed_bytes = 0

    def try_stub(j: int) -> None:
        nonlocal est, stubbed_bytes
        s = saving(j)
        if s is None:
            return
        gain, b = s
        est = max(0, est - gain)
        stubbed[j] = True
        t = tools[j][3]
        stub_len = STUB_FIXED_CHARS + t["var_bytes"] + _digits(b)
        stubbed_bytes += max(0, b - stub_len)
        stub.append((j, b))

    for i, (_, _, _, m) in enumerate(turns):
        if sticky_t[i]:
            stripped[i] = True
            est = max(0, est - m["thinking"])
            strip.append(i)
    for j in range(len(tools)):
        if sticky_s[j] and not protected[j]:
            try_stub(j)
    limit = trigger_ratio * cap
    truncated = gate = over = False
    if est > limit:
        gate = True
        target = limit if target_ratio is None else target_ratio * cap
        done = False
        for i in range(max(0, len(turns) - thinking_keep_turns)):
            if stripped[i]:
                continue
            if est <= target:
                truncated = done = True
                break
            stripped[i] = True
            est = max(0, est - turns[i][3]["thinking"])
            strip.append(i)
        if not done:
            end = max(0, len(tools) - keep_last)
            for j in range(end):
                if stubbed[j] or protected[j]:
                    continue
                if est <= target:
                    truncated = any(
                        not stubbed[k] and not protected[k] and saving(k) is not None
                        for k in range(j, end)
                    )
                    break
                try_stub(j)
        over = est > limit

    rows: dict[tuple[int, int], tuple[bool, list[tuple[int, str]]]] = {}
    for i in strip:
        g, r = turns[i][0], turns[i][1]
        rows[(g, r)] = (True, rows.get((g, r), (False, []))[1])
    ids = []
    for j, b in stub:
        g, r, _, t = tools[j]
        digest = hashlib.sha256(dumps(payload(j)).encode("utf-8", "surrogatepass")).hexdigest()
        text = f"Tool result {t['name']} [{t['id']}]: omitted {b} bytes (sha256 {digest[:32]})"
        stripped, stubs = rows.get((g, r), (False, []))
        rows[(g, r)] = (stripped, [*stubs, (t["block"], text)])
        if t["id"]:
            ids.append(t["id"])
    keys = [k for k in (thinking_key(turns[i][2]) for i in strip) if k]
    return {
        "used": used,
        "usedAfter": est,
        "truncated": truncated,
        "gateTripped": gate,
        "overBudget": over,
        "stubbedBytes": stubbed_bytes,
        "rows": [
            (g, r, stripped, tuple(sorted(stubs)))
            for (g, r), (stripped, stubs) in sorted(rows.items())
        ],
        "thinkingKeys": keys,
        "toolCallIds": ids,
        "droppedThinkingTurns": len(strip),
        "stubbedToolResults": len(stub),
    }


def message_tokens(message: Mapping[str, Any]) -> int:
    return int(measure_message(message)["tokens"])
