"""The agent loop of one run: input -> (auto-compaction) -> provider turns
-> tool rounds -> steer / follow-up -> result.

Persistence rule: the run's input is appended first; afterwards an assistant
message is appended only together with the tool results it asked for, in one
``append_many`` batch, so no abort or failure can leave a tool call without
its result in the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
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
from prism.runtime.context import RunContext, RunJournal
from prism.runtime.durable import ResumePoint
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
from prism.tools.dispatch import ExecuteCall, run_tool_calls


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
    run: RunContext,
    messages: Sequence[Message],
    first_id: str | None = None,
    phase: str | None = None,
) -> None:
    entries = [message_entry(run, m, first_id if i == 0 else None) for i, m in enumerate(messages)]
    # An opt-in attention frontier checkpoint rides in the same batch, ahead
    # of the turn it shaped, so the leaf stays a message. A durable run's
    # step checkpoint (``phase``) rides in it too (one write per step), but
    # last: a batch torn by a crash mid-write then never holds a checkpoint
    # that claims entries the file lost.
    checkpoint = attention_checkpoint(run)
    durable: list[SessionEntry] = []
    if phase is not None and run.durable:
        # The run's first checkpoint says where the run starts on the branch.
        start = entries[0]["id"] if run.step == 0 and entries else None
        status = "completed" if phase == "end" else None
        durable = run.checkpoint_entries(phase, status, start_entry_id=start)
    stored = await run.append([*checkpoint, *entries, *durable])
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
    journal = run.journal
    while True:
        if journal is None:
            outcome = await stream_turn(run, request)
        else:
            # The id is drawn outside the recorded step, so a replay that
            # skips the step still draws the same ids after it.
            message_id = run.new_entry_id()

            async def turn(message_id: str = message_id) -> dict[str, Any]:
                return (await stream_turn(run, request, message_id)).to_record()

            outcome = TurnOutcome.from_record(await journal.step("prism.provider_turn", turn))
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
        await wait_for_retry(decision, config.sleep if journal is None else journal.sleep)
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
    await _append_messages(run, [output.correction(problem)], phase="input")
    return False


async def _resume_stage(run: RunContext, resume: ResumePoint) -> str:
    """Settle what the crash left open and say where the loop continues:
    pending tool calls are run (or answered ``interrupted``), a recorded
    answer goes straight to the queue check, anything else asks the
    provider. Nothing already recorded is requested or executed again."""
    checkpoint = resume.checkpoint
    run.step = checkpoint.step
    run.messages.extend(resume.run_messages)
    if resume.stage == "final":
        run.final = resume.assistant_message
        return "final"
    if resume.stage == "request":
        steering = run.take_steering()
        if steering:
            await _append_messages(run, steering, phase="input")
        return "request"
    run.tool_rounds = 1
    run.total_tool_rounds = 1
    run.pending_calls = list(resume.pending)
    rerun: list[ToolCall] = []
    for call in resume.pending:
        if call["id"] in checkpoint.started_tool_call_ids and not _is_idempotent(run, call):
            result = interrupted_result(call)
            run.emit({"type": "tool_call", "toolCall": call})
            run.emit({"type": "tool_result", "result": result})
            await _record_result(run, result)
        else:
            rerun.append(call)
    await _dispatch_durable(run, rerun)
    return "tools"


def interrupted_result(call: ToolCall) -> ToolResult:
    """What the model is told about a non-idempotent call that started
    before a crash and left no result: it is never silently run again."""
    return _error_result(
        call,
        f"Tool {call['name']!r} was interrupted (the run's process ended while it ran);"
        " it is not marked idempotent, so it was not run again",
        "interrupted",
    )


async def _tool_round(run: RunContext, outcome: TurnOutcome) -> None:
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
    if not over_limit:
        run.tool_rounds += 1
        run.total_tool_rounds += 1
    if run.durable:
        # The provider turn is recorded before any tool runs (with the
        # results already known), so a resume never requests it again.
        known = [r for r in results if r is not None]
        run.pending_calls = [call for _, call in runnable]
        batch = [outcome.message, *(tool_result_message(r) for r in known)]
        await _append_messages(run, batch, first_id=outcome.message_id, phase="turn")
        if run.output_accepted:
            run.final = run.messages[-len(batch)]
        await _dispatch_durable(run, [call for _, call in runnable])
    else:
        if runnable:
            dispatched = await _dispatch(run, [call for _, call in runnable])
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


async def _dispatch(
    run: RunContext,
    calls: list[ToolCall],
    on_start: Callable[[int, ToolCall], Any] | None = None,
    on_result: Callable[[int, ToolResult], Any] | None = None,
) -> list[ToolResult]:
    config = run.config

    def emit_start(_index: int, call: ToolCall) -> None:
        run.emit({"type": "tool_call", "toolCall": call})

    def emit_result(_index: int, result: ToolResult) -> None:
        run.emit({"type": "tool_result", "result": result})

    async def started(index: int, call: ToolCall) -> None:
        emit_start(index, call)
        if on_start is not None:
            await on_start(index, call)

    async def finished(index: int, result: ToolResult) -> None:
        emit_result(index, result)
        if on_result is not None:
            await on_result(index, result)

    durable = on_start is not None or on_result is not None
    journal = run.journal
    return await run_tool_calls(
        calls,
        registry=config.tools,
        context=ToolContext(session_id=run.session_id, run_id=run.run_id, metadata=run.metadata),
        # A replaying engine numbers its steps in call order: one at a time.
        concurrency=config.tool_concurrency if journal is None else 1,
        middleware=config.middleware,
        permission_policy=config.permission_policy,
        redactor=config.redactor,
        # Plain runs keep the synchronous callbacks (no coroutine per call).
        on_start=started if durable else emit_start,
        on_result=finished if durable else emit_result,
        execute_call=None if journal is None else _journaled_call(run, journal),
    )


def _journaled_call(run: RunContext, journal: RunJournal) -> ExecuteCall:
    """Each tool call one recorded step. A non-idempotent call that an
    earlier execution of the run had started is not run again: the step's
    body (which only runs when no result was recorded) answers it
    ``interrupted``, as ``session.resume()`` would."""

    async def execute(call: ToolCall, dispatch: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
        async def body() -> ToolResult:
            if journal.started_before(call["id"]) and not _is_idempotent(run, call):
                return interrupted_result(call)
            return await dispatch()

        return await journal.step("prism.tool_call", body)

    return execute


def _is_idempotent(run: RunContext, call: ToolCall) -> bool:
    definition = run.config.tools.get(call["name"])
    return definition is not None and definition.idempotent


async def _record_result(run: RunContext, result: ToolResult) -> None:
    """One tool result and its checkpoint, in one write."""
    call_id = result["toolCallId"]
    run.pending_calls = [c for c in run.pending_calls if c["id"] != call_id]
    run.started_calls.discard(call_id)
    await _append_messages(run, [tool_result_message(result)], phase="tool")


async def _dispatch_durable(run: RunContext, calls: list[ToolCall]) -> None:
    """Run ``calls`` recording each result as it arrives. A non-idempotent
    call is marked started in the store first (a checkpoint-only write), so
    a resume can tell "never started" (run it) from "interrupted" (answer it
    with an error); an idempotent one may simply run again."""

    async def on_start(_index: int, call: ToolCall) -> None:
        run.started_calls.add(call["id"])
        if not _is_idempotent(run, call):
            await run.checkpoint("tool_start")

    async def on_result(_index: int, result: ToolResult) -> None:
        await _record_result(run, result)

    if calls:
        await _dispatch(run, calls, on_start, on_result)


async def execute_run(
    run: RunContext, input_messages: list[Message], resume: ResumePoint | None = None
) -> RunResult:
    """The loop. Called inside the run's cancel scope; raises on failure.
    With ``resume`` it continues an unfinished durable run from where its
    branch stops instead of appending ``input_messages``."""
    if resume is None:
        # Steering queued in the first instant of the run (before this point)
        # rides with the input, so it reaches the first provider turn.
        await _append_messages(run, [*input_messages, *run.take_steering()], phase="input")
        await maybe_auto_compact(run)
        stage = "request"
    else:
        stage = await _resume_stage(run, resume)
    while True:
        if stage == "request":
            outcome = await _provider_turn(run)
            _add_usage(run.usage, outcome.usage)
            run.stop_reason = outcome.stop_reason
            run.output_accepted = False
            had_calls = bool(outcome.tool_calls)
            if had_calls:
                await _tool_round(run, outcome)
            else:
                assert outcome.message is not None
                # With nothing queued, an answer ends the run: its checkpoint
                # says so in the same write (input arriving meanwhile is
                # still taken below, and checkpointed as the run goes on).
                ends = run.output is None and not run.inbox.has_queued()
                await _append_messages(
                    run,
                    [outcome.message],
                    first_id=outcome.message_id,
                    phase="end" if ends else "turn",
                )
                run.final = run.messages[-1]
                if run.output is not None and not await _check_text_output(
                    run, _text_of(run.final)
                ):
                    continue
        else:
            # Resumed after tool results ("tools") or after a final answer.
            had_calls = stage == "tools"
            stage = "request"
            if not had_calls and run.output is not None:
                if not await _check_text_output(run, _text_of(run.final)):
                    continue
        stage = "request"
        # Steering is consumed before the next provider turn, after the tool
        # results just appended; follow-ups only when the run would end.
        steering = run.take_steering()
        if steering:
            await _append_messages(run, steering, phase="input")
            continue
        if had_calls and not run.output_accepted:
            continue
        follow_up = run.take_follow_up()
        if follow_up is not None:
            run.tool_rounds = 0
            await _append_messages(run, [follow_up], phase="input")
            continue
        # No await between the last queue check and closing the inbox, so a
        # steer/follow_up can never be accepted and then silently dropped.
        run.close_inbox()
        break
    if not run.ended:
        await run.checkpoint("end", "completed")
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
