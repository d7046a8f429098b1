"""The agent loop of one run, in the order of its events (docs/events.md):
input -> (auto-compaction) -> provider turn -> tool round -> steer /
follow-up -> result.

The loop decides what happens; the run's ``Steps`` runner carries each step
out (``prism.runtime.steps``: plain; ``prism.runtime.durable_steps``: with
checkpoints, or under a replaying engine), so durable and plain runs take
this one path.

Persistence rule: the run's input is appended first; afterwards an assistant
message is stored only together with the tool results it asked for (or,
for a durable run, followed by them one by one, each with its checkpoint),
so no abort or failure can leave a tool call without its result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from prism.contracts import ErrorInfo, Message, ToolCall, ToolResult
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
from prism.runtime.calibrate import learn_from_turn, restore_calibration
from prism.runtime.context import Run, RunPort, RunProgress, RunSettings
from prism.runtime.result import RunResult
from prism.runtime.steps import Steps, error_result
from prism.runtime.structured import OUTPUT_TOOL_NAME, StructuredOutputError
from prism.runtime.turn import TurnOutcome, assemble_turn, stream_turn

Settle = Callable[[], Awaitable[str]]


def text_of(message: Message | None) -> str:
    if message is None:
        return ""
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


def _add_usage(total: dict[str, int], usage: Mapping[str, Any]) -> None:
    for key, value in usage.items():
        total[key] = total.get(key, 0) + value


async def execute_run(
    run: Run, input_messages: list[Message], settle: Settle | None = None
) -> RunResult:
    """The loop. Called inside the run's cancel scope; raises on failure.
    With ``settle`` (a resume) it continues an unfinished run from the stage
    ``settle`` returns instead of appending ``input_messages``."""
    settings, progress, port, steps = run.settings, run.progress, run.port, run.steps
    if settings.config.token_calibration is not None:
        restore_calibration(settings, port)
    if settle is None:
        # Steering queued in the first instant of the run (before this point)
        # rides with the input, so it reaches the first provider turn.
        await steps.record([*input_messages, *port.inbox.take_steering()], "input")
        await maybe_auto_compact(settings, port, steps)
        stage = "request"
    else:
        stage = await settle()
    while stage != "paused":
        if stage == "request":
            had_calls, accepted = await _turn(settings, progress, port, steps)
            if progress.pending_approvals:
                break  # paused for a human: no "end", resume(decisions=...) goes on
            if not accepted:
                continue  # an invalid structured answer went back to the model
        else:
            # Resumed after tool results ("tools") or after a final answer.
            had_calls = stage == "tools"
            if not had_calls and not await _accept_text(settings, progress, steps):
                stage = "request"
                continue
        stage = "request"
        if not await _take_queued(progress, port, steps, had_calls):
            break
    if not progress.pending_approvals:
        await steps.finish()
    assert port.run_id is not None
    return RunResult(
        session_id=port.session_id,
        run_id=port.run_id,
        message=progress.final,
        text=text_of(progress.final),
        messages=list(progress.messages),
        usage=dict(progress.usage),  # type: ignore[arg-type]
        stop_reason=progress.stop_reason,
        tool_rounds=progress.total_tool_rounds,
        leaf_id=port.branch.leaf_id,
        output=progress.output_value,
        pending_approvals=[dict(a) for a in progress.pending_approvals],
    )


async def _turn(
    settings: RunSettings, progress: RunProgress, port: RunPort, steps: Steps
) -> tuple[bool, bool]:
    """One provider turn and what follows it: its tool round, or its answer.
    Returns (whether it called tools, whether a structured answer, if one
    is due, was accepted)."""
    outcome = await _provider_turn(settings, progress, port, steps)
    _add_usage(progress.usage, outcome.usage)
    progress.stop_reason = outcome.stop_reason
    progress.output_accepted = False
    if outcome.tool_calls:
        await _tool_round(settings, progress, port, steps, outcome)
        return True, True
    assert outcome.message is not None
    # With nothing queued, an answer ends the run: a durable runner says so
    # in the same write (input arriving meanwhile is still taken below).
    ends = settings.output is None and not port.inbox.has_queued()
    stored = await steps.record(
        [outcome.message], "end" if ends else "turn", first_id=outcome.message_id
    )
    progress.final = stored[-1]
    return False, await _accept_text(settings, progress, steps)


async def _take_queued(progress: RunProgress, port: RunPort, steps: Steps, had_calls: bool) -> bool:
    """After a turn: steering before the next provider turn (after the tool
    results just stored), follow-ups only when the run would end. False
    when the run ends here."""
    inbox = port.inbox
    steering = inbox.take_steering()
    if steering:
        await steps.record(steering, "input")
        return True
    if had_calls and not progress.output_accepted:
        return True
    follow_up = inbox.take_follow_up()
    if follow_up is not None:
        progress.tool_rounds = 0
        await steps.record([follow_up], "input")
        return True
    # No await between the last queue check and closing the inbox, so a
    # steer/follow_up can never be accepted and then silently dropped.
    inbox.close()
    return False


async def _provider_turn(
    settings: RunSettings, progress: RunProgress, port: RunPort, steps: Steps
) -> TurnOutcome:
    """A provider turn with retry: only a failure before any output is retried."""
    progress.turn += 1
    request = await assemble_turn(settings, port, progress.turn)
    options: RetryOptions | None = settings.retry
    policy = options.resolve_policy() if options is not None else None
    attempt = 1
    while True:
        # The id is drawn outside the (possibly recorded) step, so a replay
        # that skips the step still draws the same ids after it.
        message_id = port.new_entry_id()

        async def turn(message_id: str = message_id) -> TurnOutcome:
            outcome = await stream_turn(settings, port, request, message_id)
            if outcome.error is None and settings.config.token_calibration is not None:
                # Inside the recorded step: a replay from the record learns nothing.
                record = learn_from_turn(settings, port, request, outcome.usage, message_id)
                if record is not None:
                    progress.calibration = record
            return outcome

        outcome = await steps.recorded(
            "prism.provider_turn", turn, TurnOutcome.to_record, TurnOutcome.from_record
        )
        if outcome.error is None:
            return outcome
        info: ErrorInfo = redact_error_info(outcome.error, settings.config.redactor)
        if policy is None or options is None or outcome.output_started:
            raise ProviderError(info)
        ctx = RetryContext(
            attempt=attempt,
            error=info,
            output_started=False,
            session_id=port.session_id,
            run_id=port.run_id,
            metadata=options.metadata,
        )
        decision = await decide_retry(policy, ctx)
        middleware = settings.config.middleware
        if decision.retry and middleware is not None and middleware.has("retry"):
            updated = await middleware.run("retry", {"context": ctx, "decision": decision})
            decision = clamp_middleware_decision(decision, updated)
        if not decision.retry:
            raise ProviderError(with_refusal(info, decision, attempt))
        port.emit(
            {
                "type": "retry_scheduled",
                "attempt": attempt,
                "delayMs": decision.delay_ms,
                "error": info,
            }
        )
        await wait_for_retry(decision, steps.sleep)
        attempt += 1


def is_output_call(settings: RunSettings, call: ToolCall) -> bool:
    output = settings.output
    return output is not None and output.mode == "tool" and call["name"] == OUTPUT_TOOL_NAME


def output_result(settings: RunSettings, progress: RunProgress, call: ToolCall) -> ToolResult:
    """The structured-output tool is the runtime's own: its arguments are the
    answer, validated here instead of dispatched."""
    assert settings.output is not None
    value, problem = settings.output.validate(call["arguments"])
    if problem is not None:
        name = settings.output.label or settings.output.name
        return error_result(call, f"not a valid {name}: {problem}", "invalid_output")
    progress.output_value = value
    progress.output_accepted = True
    return {"toolCallId": call["id"], "name": call["name"], "value": "Final answer received."}


async def _accept_text(settings: RunSettings, progress: RunProgress, steps: Steps) -> bool:
    """Validate a final text reply against the run's ``output_type`` (True
    without one). When it is not valid the problem goes back to the model
    as a correction (one tool round of the budget) and the loop goes on."""
    output = settings.output
    if output is None:
        return True
    value, problem = output.parse_text(text_of(progress.final))
    if problem is None:
        progress.output_value = value
        progress.output_accepted = True
        return True
    if progress.tool_rounds >= settings.max_tool_rounds:
        raise StructuredOutputError(
            f"The model's answer is not a valid {output.label or output.name} after max_tool_rounds "
            f"({settings.max_tool_rounds}) corrections: {problem}"
        )
    progress.tool_rounds += 1
    await steps.record([output.correction(problem)], "input")
    return False


async def _tool_round(
    settings: RunSettings,
    progress: RunProgress,
    port: RunPort,
    steps: Steps,
    outcome: TurnOutcome,
) -> None:
    assert outcome.message is not None
    calls = outcome.tool_calls
    limit = settings.max_tool_rounds
    over_limit = progress.tool_rounds >= limit
    results: list[ToolResult | None] = [None] * len(calls)
    runnable: list[tuple[int, ToolCall]] = []
    for index, call in enumerate(calls):
        if over_limit:
            why = f"Tool not run: the run reached max_tool_rounds ({limit})"
            results[index] = error_result(call, why, "max_tool_rounds")
        elif call["id"] in outcome.invalid_calls:
            why = outcome.invalid_calls[call["id"]]
            results[index] = error_result(call, why, "invalid_arguments")
        elif is_output_call(settings, call):
            results[index] = output_result(settings, progress, call)
        else:
            runnable.append((index, call))
    for index, result in enumerate(results):
        if result is not None:
            if not over_limit:
                port.emit({"type": "tool_call", "toolCall": calls[index]})
            port.emit({"type": "tool_result", "result": result})
    if not over_limit:
        progress.tool_rounds += 1
        progress.total_tool_rounds += 1
    assistant = await steps.tool_round(outcome.message, outcome.message_id, results, runnable)
    if progress.output_accepted:
        progress.final = assistant
    if over_limit:
        raise MaxToolRoundsError(
            f"Agent run exceeded max_tool_rounds ({limit}): the provider asked for"
            " more tool calls; they were answered with error results and not run"
        )
