"""A host summarizer's text in place of the digest stub (``tool_result_fold``).

The native plan picks the rows and writes digest stubs; this swaps in the
host's summary for each picked tool result. The answer is cached per
tool-call id on the sticky frontier: a re-applied row never calls the
summarizer again and always gets the same text, so the cached prefix of the
prompt survives. Token and byte counts of the plan are corrected by each
swap's own delta, the same per-block rule the native measure uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prism.attention.frontier import AttentionStickyFrontier
from prism.attention.policy import ToolResultFold

# Four times the frontier's tool-call-id bound: a row still sticky is
# always found, so its text never changes.
FOLD_CACHE_LIMIT = 1024


def _block_tokens(block: Mapping[str, Any]) -> int:
    from prism import _native

    # The message estimate is its blocks plus 4; one block alone, minus 4.
    return int(_native.attention_message_tokens({"role": "tool", "content": [block]})) - 4


def _cap_utf8(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def _summary(
    fold: ToolResultFold, block: Mapping[str, Any], stub: str, redactor: Any
) -> str | None:
    """The host's text for ``block``, or None to keep the digest stub."""
    try:
        text = fold.summarize(block)
    except Exception:
        # The digest stub is always correct; a failing summarizer must not
        # fail the turn. The decision is cached, so the row stays a stub.
        return None
    if not isinstance(text, str) or not text:
        return None
    redact = getattr(redactor, "redact_text", None)
    if callable(redact):
        text = redact(text)
    text = _cap_utf8(text, fold.max_summary_bytes)
    # Only when it actually shrinks the row (the stub rule of the pass).
    if _block_tokens({**block, "result": text}) >= _block_tokens(block):
        return None
    return text if text != stub else None


def fold_plan(
    fold: ToolResultFold,
    plan: dict[str, Any],
    lists: Sequence[Sequence[Any]],
    frontier: AttentionStickyFrontier | None,
    redactor: Any,
) -> dict[str, Any]:
    """``plan`` with each picked row's stub text replaced by the host summary
    (cached per call id on ``frontier``) and ``usedAfter`` / ``stubbedBytes``
    corrected."""
    cache = frontier.fold_cache if frontier is not None else {}
    used_after = plan["usedAfter"]
    stubbed_bytes = plan["stubbedBytes"]
    rows = []
    for g, r, strip, stubs in plan["rows"]:
        message = lists[g][r]
        content = message["content"]
        new_stubs = []
        for b, stub in stubs:
            block = content[b]
            call_id = block.get("toolCallId")
            key = call_id if isinstance(call_id, str) else None
            if key is not None and key in cache:
                text = cache.pop(key)
                cache[key] = text  # refreshed: rows still in use are evicted last
            else:
                text = _summary(fold, block, stub, redactor)
                if key is not None:
                    cache[key] = text
                    if len(cache) > FOLD_CACHE_LIMIT:
                        del cache[next(iter(cache))]
            if text is None:
                new_stubs.append((b, stub))
                continue
            used_after += _block_tokens({**block, "result": text}) - _block_tokens(
                {**block, "result": stub}
            )
            # stubbedBytes is payload minus replacement bytes, summed.
            stubbed_bytes += len(stub.encode("utf-8")) - len(text.encode("utf-8"))
            new_stubs.append((b, text))
        rows.append((g, r, strip, tuple(new_stubs)))
    return {**plan, "rows": rows, "usedAfter": used_after, "stubbedBytes": stubbed_bytes}
