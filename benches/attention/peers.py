"""The peers' strategies, applied to the compiler-off request stream.

- ``openai-agents ToolOutputTrimmer``: the real class from the openai-agents
  package (a ``call_model_input_filter``) with its defaults (recent_turns=2,
  max_output_chars=500, preview_chars=200). Each Prism request is converted
  to Responses input items (user/assistant messages, ``function_call`` and
  ``function_call_output`` items, tool results as compact JSON strings), run
  through the trimmer, and every trimmed output is written back into the
  Prism request, which is then scored like every other variant. Without the
  package an emulation of the same rule is used; :func:`emulated_trim` is
  cross-checked against the real class in tests/attention.
- ``Anthropic context editing``: server-side, emulated from the documented
  defaults: ``clear_tool_uses_20250919`` (trigger at 100,000 input tokens,
  keep the 3 newest tool uses, clear older tool results, replacing them with
  a short placeholder) and ``clear_thinking_20251015`` (keep the thinking of
  the newest assistant turn that has any). The client keeps sending the full
  history; the edit applies to each request as it arrives, and the prompt
  cache sees the edited request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from prism._bench.attention.scenario import Scorer, VariantResult, row_tokens

ANTHROPIC_TRIGGER = 100_000
ANTHROPIC_KEEP_TOOL_USES = 3
ANTHROPIC_KEEP_THINKING_TURNS = 1
# The documentation does not give the placeholder's text; any short text
# costs the same few tokens.
ANTHROPIC_PLACEHOLDER = "[tool result cleared]"
TRIM_RECENT_TURNS = 2
TRIM_MAX_OUTPUT_CHARS = 500
TRIM_PREVIEW_CHARS = 200


def _output_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    return json.dumps(result, separators=(",", ":"), ensure_ascii=False)


def to_responses_items(
    messages: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[int, tuple[int, int]]]:
    """Responses-API input items for ``messages`` and, for each
    ``function_call_output`` item, the (message, block) it came from."""
    items: list[dict[str, Any]] = []
    origin: dict[int, tuple[int, int]] = {}
    for m, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content") or []
        if role in ("system", "user"):
            text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
            items.append({"role": role, "content": text})
            continue
        for b, block in enumerate(content):
            kind = block.get("type")
            if kind == "text":
                items.append({"role": "assistant", "content": block["text"]})
            elif kind == "thinking":
                items.append({"type": "reasoning", "summary": [], "id": f"rs_{m}_{b}"})
            elif kind == "tool_call":
                items.append(
                    {
                        "type": "function_call",
                        "call_id": block["id"],
                        "name": block["name"],
                        "arguments": json.dumps(block.get("arguments", {})),
                    }
                )
            elif kind == "tool_result":
                origin[len(items)] = (m, b)
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": block["toolCallId"],
                        "output": _output_text(block["result"]),
                    }
                )
    return items, origin


def emulated_trim(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trimmer's rule for string outputs: before the ``recent_turns``-th
    user message from the end, an output longer than ``max_output_chars``
    becomes a header plus a ``preview_chars`` preview."""
    users = [i for i, item in enumerate(items) if item.get("role") == "user"]
    if len(users) < TRIM_RECENT_TURNS:
        return items
    boundary = users[-TRIM_RECENT_TURNS]
    names = {it["call_id"]: it["name"] for it in items if it.get("type") == "function_call"}
    out = []
    for i, item in enumerate(items):
        if i < boundary and item.get("type") == "function_call_output":
            text = item["output"]
            if len(text) > TRIM_MAX_OUTPUT_CHARS:
                name = names.get(item["call_id"]) or "unknown_tool"
                summary = (
                    f"[Trimmed: {name} output — {len(text)} chars → "
                    f"{TRIM_PREVIEW_CHARS} char preview]\n{text[:TRIM_PREVIEW_CHARS]}..."
                )
                if len(summary) < len(text):
                    item = {**item, "output": summary}
        out.append(item)
    return out


def real_trimmer() -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None:
    """The openai-agents ToolOutputTrimmer as an items -> items function, or
    None when the package is not installed."""
    try:
        from agents.extensions import ToolOutputTrimmer
        from agents.run_config import CallModelData, ModelInputData
    except ImportError:
        return None
    trimmer = ToolOutputTrimmer(
        recent_turns=TRIM_RECENT_TURNS,
        max_output_chars=TRIM_MAX_OUTPUT_CHARS,
        preview_chars=TRIM_PREVIEW_CHARS,
    )

    def run(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        data = CallModelData(
            model_data=ModelInputData(input=items, instructions=None),  # type: ignore[arg-type]
            agent=None,  # type: ignore[arg-type]
            context=None,
        )
        return list(trimmer(data).input)  # type: ignore[arg-type]

    return run


def trimmed_request(
    request: dict[str, Any], trim: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
) -> dict[str, Any]:
    items, origin = to_responses_items(request["messages"])
    after = trim(items)
    messages = list(request["messages"])
    for index, (m, b) in origin.items():
        new = after[index]["output"]
        if new != items[index]["output"]:
            message = messages[m] = {**messages[m], "content": list(messages[m]["content"])}
            message["content"][b] = {**message["content"][b], "result": new}
    return {**request, "messages": messages}


def _turns(messages: list[dict[str, Any]]) -> list[list[int]]:
    """Assistant-side message indices grouped into turns (a user message
    starts a new turn; tool results belong to the turn)."""
    turns: list[list[int]] = []
    for i, message in enumerate(messages):
        if message.get("role") == "user":
            turns.append([])
        elif message.get("role") in ("assistant", "tool") and turns:
            turns[-1].append(i)
    return turns


def anthropic_edited(request: dict[str, Any]) -> dict[str, Any]:
    messages = list(request["messages"])
    raw = sum(row_tokens(i + 1, m) for i, m in enumerate(messages))
    raw += row_tokens(0, request.get("tools", []))
    if raw >= ANTHROPIC_TRIGGER:
        results = [
            (m, b)
            for m, message in enumerate(messages)
            for b, block in enumerate(message.get("content") or [])
            if block.get("type") == "tool_result"
        ]
        for m, b in results[: max(len(results) - ANTHROPIC_KEEP_TOOL_USES, 0)]:
            message = messages[m] = {**messages[m], "content": list(messages[m]["content"])}
            message["content"][b] = {**message["content"][b], "result": ANTHROPIC_PLACEHOLDER}
    thinking_turns = [
        turn
        for turn in _turns(messages)
        if any(b.get("type") == "thinking" for i in turn for b in messages[i].get("content") or [])
    ]
    for turn in thinking_turns[: max(len(thinking_turns) - ANTHROPIC_KEEP_THINKING_TURNS, 0)]:
        for i in turn:
            content = messages[i].get("content") or []
            if any(b.get("type") == "thinking" for b in content):
                messages[i] = {
                    **messages[i],
                    "content": [b for b in content if b.get("type") != "thinking"],
                }
    return {**request, "messages": messages}


class PeerScorer:
    """Scores a peer's edit of each request of the compiler-off stream."""

    def __init__(self, result: VariantResult, edit: Callable[[dict[str, Any]], dict[str, Any]]):
        self.result = result
        self._edit = edit
        self._scorer = Scorer(result)

    def seed(self, request: dict[str, Any]) -> None:
        self._scorer.seed(self._edit(request))

    def feed(self, request: dict[str, Any]) -> None:
        self._scorer.feed(self._edit(request))


def peer_scorers() -> list[PeerScorer]:
    trim = real_trimmer()
    trim_result = VariantResult("openai trim", kind="peer")
    if trim is None:
        trim = emulated_trim
        trim_result.note = "openai-agents not installed: emulated ToolOutputTrimmer"
    else:
        trim_result.note = "openai-agents ToolOutputTrimmer (real class), defaults"
    anthropic = VariantResult("anthropic edit", kind="peer")
    anthropic.note = (
        "Anthropic context editing, emulated: clear_tool_uses (trigger 100k, keep 3) "
        "+ clear_thinking (keep 1 turn)"
    )
    return [
        PeerScorer(trim_result, lambda r, t=trim: trimmed_request(r, t)),
        PeerScorer(anthropic, anthropic_edited),
    ]
