"""``compile_attention``: one turn of the attention gate.

The native core measures every row of the request once and plans the
mutations (see rust/prism-core/src/attention); this module applies that
plan to a shallow clone. New lists and dicts are made only along mutated paths, so the
caller's arrays, the messages they hold and the session store are never
written, and under the ratio (with nothing sticky to re-apply) the very same
groups object comes back.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from prism.attention.fold import fold_plan
from prism.attention.frontier import AttentionStickyFrontier
from prism.attention.options import AttentionCompiler, create_attention_compiler
from prism.attention.policy import at_tool_result_boundary
from prism.attention.report import AttentionReport
from prism.errors import AttentionBudgetError
from prism.security.redaction import SecretRedactor, require_redactor

# Compose order of the message groups; only history and in-flight tool
# results may be shrunk (instructions, summaries, the turn's input and
# attachments are the frozen prefix / the task itself).
GROUP_FIELDS = ("instructions", "summaries", "history", "input", "attachments", "tool_results")
MUTABLE = [False, False, True, False, False, True]
HISTORY = GROUP_FIELDS.index("history")
MEMO_LIMIT = 2048


class AttentionOutcome(NamedTuple):
    groups: Any
    mutated: bool
    report: AttentionReport


def create_attention_measure_cache() -> Any:
    """A session-owned cache of per-row estimates for ``incremental`` compilers.

    Rows are keyed by position and object identity (the cache keeps a
    reference, so an id cannot be reused): a turn whose history only grew
    measures only its new rows, and a replaced message is measured again.
    Messages must not be edited in place once assembled (session history
    never is).
    """
    from prism import _native

    return _native.AttentionMeasureCache()


def _skill_values(skills: Sequence[Any]) -> list[Any]:
    # Skills are host objects; what reaches the model is their rendered text.
    out: list[Any] = []
    for skill in skills:
        render = getattr(skill, "render", None)
        out.append(render() if callable(render) else skill)
    return out


def _group_lists(groups: Any) -> list[Sequence[Any]]:
    if isinstance(groups, Mapping):
        return [groups.get(name) or [] for name in GROUP_FIELDS]
    return [getattr(groups, name, None) or [] for name in GROUP_FIELDS]


def _extra(groups: Any, name: str, given: Sequence[Any] | None) -> Sequence[Any]:
    if given is not None:
        return given
    if isinstance(groups, Mapping):
        return groups.get(name) or []
    return getattr(groups, name, None) or []


def compile_attention(
    compiler: Any,
    groups: Any,
    *,
    model: Mapping[str, Any] | None = None,
    context: Sequence[Any] | None = None,
    skills: Sequence[Any] | None = None,
    tools: Sequence[Any] | None = None,
    frontier: AttentionStickyFrontier | None = None,
    redactor: SecretRedactor,
    turn: int | None = None,
    session_id: str | None = None,
    run_id: str | None = None,
    measure_cache: Any = None,
) -> AttentionOutcome:
    """Gate one request; returns ``(groups, mutated, report)``.

    ``compiler`` is an :class:`AttentionCompiler` or raw options (validated
    for this call against ``model``). ``groups`` is a ``MessageGroups`` (or a
    mapping with the same fields); ``context``/``skills``/``tools`` default to
    the groups' own. With an ``incremental`` compiler, per-row estimates are
    cached on ``measure_cache`` (default: the frontier's). Sticky rows in ``frontier`` are re-applied first and
    counted again; rows shrunk this turn are added to it. Works on a shallow
    clone: nothing the caller holds is mutated. Raises
    :class:`AttentionBudgetError` when every eligible stage ran and the
    estimate is still over ``trigger_ratio`` of the input cap. With a
    frontier, the compiled history is recorded on it
    (:meth:`AttentionStickyFrontier.note_compiled`): its ``stable_rows`` and
    ``stable_message`` then say how much history is unchanged since the
    previous compile, which is where a prompt-cache breakpoint belongs.
    """
    compiler, scale = _calibrated(compiler, model, frontier)
    if compiler.incremental and measure_cache is None and frontier is not None:
        measure_cache = frontier.measure_cache
    lists = _group_lists(groups)
    extras = [
        _extra(groups, "context_blocks", context),
        _skill_values(_extra(groups, "skills", skills)),
        _extra(groups, "tools", tools),
    ]
    cache = measure_cache if compiler.incremental else None
    require_redactor(redactor, owner="compile_attention")
    plan = _plan(compiler, lists, extras, frontier, redactor, cache)
    if plan["overBudget"]:
        raise AttentionBudgetError(
            plan["used"], plan["usedAfter"], compiler.input_cap, compiler.trigger_ratio
        )
    if (
        compiler.policy == "proactive"
        and not plan["gateTripped"]
        and plan["usedAfter"] >= compiler.proactive_floor * compiler.input_cap
        and at_tool_result_boundary(lists)
    ):
        plan = _proactive(compiler, plan, lists, extras, frontier, redactor, cache)
    if plan["rows"] and compiler.tool_result_fold is not None:
        plan = fold_plan(compiler.tool_result_fold, plan, lists, frontier, redactor)
        if plan["gateTripped"] and plan["usedAfter"] > compiler.trigger_ratio * compiler.input_cap:
            raise AttentionBudgetError(
                plan["used"], plan["usedAfter"], compiler.input_cap, compiler.trigger_ratio
            )
    report = _report(plan, compiler, scale, run_id=run_id, session_id=session_id, turn=turn)
    if not plan["rows"]:
        if frontier is not None:
            frontier.note_compiled(lists[HISTORY])
        return AttentionOutcome(groups, False, report)
    memo = frontier.clone_memo if frontier is not None else None
    clone = apply_attention_plan(groups, lists, plan["rows"], memo)
    if frontier is not None:
        frontier.add(plan["thinkingKeys"], plan["toolCallIds"])
        frontier.note_compiled(_group_lists(clone)[HISTORY])
    return AttentionOutcome(clone, True, report)


def _calibrated(
    compiler: Any, model: Mapping[str, Any] | None, frontier: AttentionStickyFrontier | None
) -> tuple[AttentionCompiler, float]:
    """The compiler for this call and the session's token scale."""
    if not isinstance(compiler, AttentionCompiler):
        compiler = create_attention_compiler(compiler, model=model)
    scale = frontier.token_scale if frontier is not None else 1.0
    if scale != 1.0:
        # A calibrated session: the cap in plain-estimate tokens that holds
        # the provider's count of the request at the configured cap.
        compiler = dataclasses.replace(compiler, input_cap=max(1, int(compiler.input_cap / scale)))
    return compiler, scale


def _report(
    plan: dict[str, Any],
    compiler: AttentionCompiler,
    scale: float,
    *,
    run_id: str | None,
    session_id: str | None,
    turn: int | None,
) -> AttentionReport:
    return AttentionReport(
        used=plan["used"],
        used_after=plan["usedAfter"],
        input_cap=compiler.input_cap,
        trigger_ratio=compiler.trigger_ratio,
        dropped_thinking_turns=plan["droppedThinkingTurns"],
        stubbed_tool_results=plan["stubbedToolResults"],
        stubbed_bytes=plan["stubbedBytes"],
        truncated=plan["truncated"],
        token_scale=scale,
        run_id=run_id,
        session_id=session_id,
        turn=turn,
    )


def _plan(
    compiler: AttentionCompiler,
    lists: list[Sequence[Any]],
    extras: list[Sequence[Any]],
    frontier: AttentionStickyFrontier | None,
    redactor: Any,
    cache: Any,
    *,
    everything: bool = False,
) -> dict[str, Any]:
    """One native measure + plan. ``everything`` plans a trip to full depth
    whatever the estimate (a zero trigger), for the proactive rule and the
    compaction floor; its ``overBudget`` flag is then meaningless and is
    cleared."""
    from prism import _native

    plan: dict[str, Any] = _native.attention_plan(
        lists,
        MUTABLE,
        extras,
        compiler.input_cap,
        0.0 if everything else compiler.trigger_ratio,
        0.0 if everything else compiler.trip_target_ratio,
        compiler.thinking_keep_turns,
        compiler.keep_last,
        list(compiler.exclude_tools),
        frontier.thinking.as_set() if frontier is not None else None,
        frontier.tool_call_ids.as_set() if frontier is not None else None,
        # The native pass takes the native Redactor; one without secrets
        # (e.g. a NoopRedactor) changes nothing.
        redactor if redactor is not None and len(redactor) else None,
        cache,
    )
    if everything:
        plan["overBudget"] = False
    return plan


def _proactive(
    compiler: AttentionCompiler,
    plan: dict[str, Any],
    lists: list[Sequence[Any]],
    extras: list[Sequence[Any]],
    frontier: AttentionStickyFrontier | None,
    redactor: Any,
    cache: Any,
) -> dict[str, Any]:
    """Under the trigger, at a tool result: trip to full depth when the
    tokens it takes out are at least ``compiler.proactive_ratio`` times what
    is left (then the rewrite is paid back by cheaper cache reads over the
    next requests), else keep ``plan`` (sticky rows only)."""
    full = _plan(compiler, lists, extras, frontier, redactor, cache, everything=True)
    reducible = plan["usedAfter"] - full["usedAfter"]
    if reducible > 0 and reducible >= compiler.proactive_ratio * full["usedAfter"]:
        return full
    return plan


def estimate_compiled_tokens(
    compiler: Any,
    messages: Sequence[Any],
    *,
    frontier: AttentionStickyFrontier | None = None,
    model: Mapping[str, Any] | None = None,
) -> int:
    """How full ``messages`` are for auto-compaction when the gate is on.

    The gate can always shrink the request to its floor (every eligible row
    reduced, sticky rows included), and it fails once the floor passes
    ``trigger_ratio`` of the cap. A run can add a tool result the gate may
    not shrink (the newest ``keep_last`` are kept), so this returns the
    floor plus the largest recent tool message, in the trigger's frame
    (divided by ``trigger_ratio``): an ``input_ratio`` trigger at 0.9 hands
    off to compaction while the gate still has room for one more result like
    the recent ones, and not merely because the raw history is long.
    Nothing is mutated and the frontier is not changed."""
    from prism import _native

    if not isinstance(compiler, AttentionCompiler):
        compiler = create_attention_compiler(compiler, model=model)
    lists: list[Sequence[Any]] = [[], [], list(messages), [], [], []]
    floor = _plan(compiler, lists, [[], [], []], frontier, None, None, everything=True)
    recent = [m for m in messages[-4 * max(compiler.keep_last, 1) :] if _role(m) == "tool"]
    room: int = max((_native.estimate_message_tokens(m) for m in recent), default=0)
    ratio: float = compiler.trigger_ratio
    return math.ceil((int(floor["usedAfter"]) + room) / ratio)


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)


def apply_attention_plan(
    groups: Any,
    lists: list[Sequence[Any]],
    rows: Sequence[tuple[int, int, bool, tuple[tuple[int, str], ...]]],
    memo: dict[int, tuple[Any, Any, Any]] | None = None,
) -> Any:
    """A shallow clone of ``groups`` where each ``(group, row, strip, stubs)``
    entry has its thinking blocks stripped (``strip``) and the listed
    ``(block, stub text)`` tool-result payloads replaced; only mutated paths
    get new containers.

    ``memo`` (the frontier's) maps a message's id to ``(message, ops, clone)``
    so a sticky row re-applied turn after turn reuses its clone instead of
    being rebuilt; the entry keeps the message alive, so its id is stable."""
    changes: dict[int, list[Any]] = {}
    for g, r, stripped, stubs in rows:
        new_list = changes.get(g)
        if new_list is None:
            new_list = changes[g] = list(lists[g])
        message = new_list[r]
        if memo is not None:
            hit = memo.get(id(message))
            if hit is not None and hit[0] is message and hit[1] == (stripped, stubs):
                new_list[r] = hit[2]
                continue
        texts = dict(stubs)
        content: list[Any] = []
        for b, block in enumerate(message["content"]):
            if stripped and isinstance(block, Mapping) and block.get("type") == "thinking":
                continue
            stub_text = texts.get(b)
            # The stub keeps toolCallId and name, so the call stays paired.
            content.append(block if stub_text is None else {**block, "result": stub_text})
        clone = new_list[r] = {**message, "content": content}
        if memo is not None:
            if len(memo) >= MEMO_LIMIT:
                memo.clear()
            memo[id(message)] = (message, (stripped, stubs), clone)
    named = {GROUP_FIELDS[g]: new_list for g, new_list in changes.items()}
    if isinstance(groups, Mapping):
        return {**groups, **named}
    return dataclasses.replace(groups, **named)
