"""The agent loop of one run: input -> (auto-compaction) -> provider turns
-> tool rounds -> steer / follow-up -> result.

Persistence rule: the run's input is appended first; afterwards an assistant
message is appended only together with the tool results it asked for, in one
``append_many`` batch, so no abort or failure can leave a tool call without
its result in the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prism.assembly.groups import tool_result_message
from prism.contracts import ErrorInfo, Message, SessionEntry, ToolCall, ToolResult
from prism.errors import MaxToolRoundsError, ProviderError, redact_error_info
from prism.retry import (
    RetryContext,
    RetryOptions,
    clamp_middleware_decision,
    decide_retry,
    wait_for_retry,
    with_refusal,
)
from prism.runtime.autocompact import maybe_auto_compact
from prism.runtime.context import RunContext
from prism.runtime.result import RunResult
from prism.runtime.structured import OUTPUT_TOOL_NAME, StructuredOutputError
from prism.runtime.turn import (
    TurnOutcome,
    assemble_turn,
    attention_checkpoint,
    attention_checkpoint_stored,
    stream_turn,
)
from prism.tools.definition import ToolContext
from prism.tools.dispatch import run_tool_calls


def _text_of(message: Message | None) -> str:
    if message is None:
        return ""
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


def _add_usage(total: dict[str, int], usage: Mapping[str, Any]) -> None:
    for key, value in usage.items():
        total[key] = total.get(key, 0) + value


def message_entry(run: RunContext, message: Message, entry_id: str | None = None) -> SessionEntry:
    return {
        "id": entry_id or run.new_entry_id(),
        "sessionId": run.session_id,
        "parentId": None,  # chained under the leaf at append time
        "kind": "message",
        "message": message,
    }


def _error_result(call: ToolCall, message: str, code: str) -> ToolResult:
    return {
        "toolCallId": call["id"],
        "name": call["name"],
        "value": {"message": message, "code": code},
        "isError": True,
    }


async def _append_messages(
    run: RunContext, messages: Sequence[Message], first_id: str | None = None
) -> None:
    entries = [message_entry(run, m, first_id if i == 0 else None) for i, m in enumerate(messages)]
    # An opt-in attention frontier checkpoint rides in the same batch, ahead
    # of the turn it shaped, so the leaf stays a message.
    checkpoint = attention_checkpoint(run)
    stored = await run.append([*checkpoint, *entries])
    attention_checkpoint_stored(run, checkpoint)
    # The stored (redacted when secrets are set) copies are what the result reports.
    run.messages.extend(entry["message"] for entry in stored if entry["kind"] == "message")


async def _provider_turn(run: RunContext) -> TurnOutcome:
    """A provider turn with retry: only a failure before any output is retried."""
    config = run.config
    run.turn += 1
    request = await assemble_turn(run)
    options: RetryOptions | None = run.retry
    policy = options.resolve_policy() if options is not None else None
    attempt = 1
    while True:
        outcome = await stream_turn(run, request)
        if outcome.error is None:
            return outcome
        info: ErrorInfo = outcome.error
        if options is not None:
            info = redact_error_info(info, options.redactor)
        if policy is None or options is None or outcome.output_started:
            raise ProviderError(info)
        ctx = RetryContext(
            attempt=attempt,
            error=info,
            output_started=False,
            session_id=run.session_id,
            run_id=run.run_id,
            metadata=options.metadata,
        )
        decision = await decide_retry(policy, ctx)
        middleware = config.middleware
        if decision.retry and middleware is not None and middleware.has("retry"):
            updated = await middleware.run("retry", {"context": ctx, "decision": decision})
            decision = clamp_middleware_decision(decision, updated)
        if not decision.retry:
            raise ProviderError(with_refusal(info, decision, attempt))
        run.emit(
            {
                "type": "retry_scheduled",
                "attempt": attempt,
                "delayMs": decision.delay_ms,
                "error": info,
            }
        )
        await wait_for_retry(decision, config.sleep)
        attempt += 1


def _is_output_call(run: RunContext, call: ToolCall) -> bool:
    output = run.output
    return output is not None and output.mode == "tool" and call["name"] == OUTPUT_TOOL_NAME


def _output_result(run: RunContext, call: ToolCall) -> ToolResult:
    """The structured-output tool is the runtime's own: its arguments are the
    answer, validated here instead of dispatched."""
    assert run.output is not None
    value, problem = run.output.validate(call["arguments"])
    if problem is not None:
        return _error_result(call, f"not a valid {run.output.name}: {problem}", "invalid_output")
    run.output_value = value
    run.output_accepted = True
    return {"toolCallId": call["id"], "name": call["name"], "value": "Final answer received."}


async def _check_text_output(run: RunContext, text: str) -> bool:
    """Validate a final text reply against the run's ``output_type``. True
    when it is accepted; else the problem goes back to the model as a
    correction (one tool round of the budget) and the loop goes on."""
    output = run.output
    assert output is not None
    value, problem = output.parse_text(text)
    if problem is None:
        run.output_value = value
        run.output_accepted = True
        return True
    if run.tool_rounds >= run.max_tool_rounds:
        raise StructuredOutputError(
            f"The model's answer is not a valid {output.name} after max_tool_rounds "
            f"({run.max_tool_rounds}) corrections: {problem}"
        )
    run.tool_rounds += 1
    await _append_messages(run, [output.correction(problem)])
    return False


async def _tool_round(run: RunContext, outcome: TurnOutcome) -> None:
    config = run.config
    assert outcome.message is not None
    calls = outcome.tool_calls
    over_limit = run.tool_rounds >= run.max_tool_rounds
    results: list[ToolResult | None] = [None] * len(calls)
    runnable: list[tuple[int, ToolCall]] = []
    for index, call in enumerate(calls):
        if over_limit:
            results[index] = _error_result(
                call,
                f"Tool not run: the run reached max_tool_rounds ({run.max_tool_rounds})",
                "max_tool_rounds",
            )
        elif call["id"] in outcome.invalid_calls:
            results[index] = _error_result(
                call, outcome.invalid_calls[call["id"]], "invalid_arguments"
            )
        elif _is_output_call(run, call):
            results[index] = _output_result(run, call)
        else:
            runnable.append((index, call))
    for index, result in enumerate(results):
        if result is not None:
            if not over_limit:
                run.emit({"type": "tool_call", "toolCall": calls[index]})
            run.emit({"type": "tool_result", "result": result})

    def on_start(_index: int, call: ToolCall) -> None:
        run.emit({"type": "tool_call", "toolCall": call})

    def on_result(_index: int, result: ToolResult) -> None:
        run.emit({"type": "tool_result", "result": result})

    if not over_limit:
        run.tool_rounds += 1
        run.total_tool_rounds += 1
    if runnable:
        dispatched = await run_tool_calls(
            [call for _, call in runnable],
            registry=config.tools,
            context=ToolContext(
                session_id=run.session_id, run_id=run.run_id, metadata=run.metadata
            ),
            concurrency=config.tool_concurrency,
            middleware=config.middleware,
            permission_policy=config.permission_policy,
            redactor=config.redactor,
            on_start=on_start,
            on_result=on_result,
        )
        for (index, _), result in zip(runnable, dispatched, strict=True):
            results[index] = result
    finished = [r for r in results if r is not None]
    batch = [outcome.message, *(tool_result_message(r) for r in finished)]
    await _append_messages(run, batch, first_id=outcome.message_id)
    if run.output_accepted:
        run.final = run.messages[-len(batch)]
    if over_limit:
        raise MaxToolRoundsError(
            f"Agent run exceeded max_tool_rounds ({run.max_tool_rounds}): the provider asked for"
            " more tool calls; they were answered with error results and not run"
        )


async def execute_run(run: RunContext, input_messages: list[Message]) -> RunResult:
    """The loop. Called inside the run's cancel scope; raises on failure."""
    # Steering queued in the first instant of the run (before this point)
    # rides with the input, so it reaches the first provider turn.
    await _append_messages(run, [*input_messages, *run.take_steering()])
    await run.checkpoint("input")
    await maybe_auto_compact(run)
    while True:
        outcome = await _provider_turn(run)
        _add_usage(run.usage, outcome.usage)
        run.stop_reason = outcome.stop_reason
        run.output_accepted = False
        if outcome.tool_calls:
            await _tool_round(run, outcome)
            await run.checkpoint("tools")
        else:
            assert outcome.message is not None
            await _append_messages(run, [outcome.message], first_id=outcome.message_id)
            run.final = run.messages[-1]
            await run.checkpoint("turn")
            if run.output is not None and not await _check_text_output(run, _text_of(run.final)):
                continue
        # Steering is consumed before the next provider turn, after the tool
        # results just appended; follow-ups only when the run would end.
        steering = run.take_steering()
        if steering:
            await _append_messages(run, steering)
            continue
        if outcome.tool_calls and not run.output_accepted:
            continue
        follow_up = run.take_follow_up()
        if follow_up is not None:
            run.tool_rounds = 0
            await _append_messages(run, [follow_up])
            continue
        # No await between the last queue check and closing the inbox, so a
        # steer/follow_up can never be accepted and then silently dropped.
        run.close_inbox()
        break
    await run.checkpoint("end")
    assert run.run_id is not None
    return RunResult(
        session_id=run.session_id,
        run_id=run.run_id,
        message=run.final,
        text=_text_of(run.final),
        messages=list(run.messages),
        usage=dict(run.usage),  # type: ignore[arg-type]
        stop_reason=run.stop_reason,
        tool_rounds=run.total_tool_rounds,
        leaf_id=run.branch.leaf_id,
        output=run.output_value,
    )
