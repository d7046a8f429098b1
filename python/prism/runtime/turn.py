"""One provider turn: assemble the request, stream the provider, build the
assistant message. The loop around turns lives in ``prism.runtime.loop``.

``assemble_turn`` is the single place the runtime builds a provider request,
so attention compilation and other request shaping plug in here.
"""

from __future__ import annotations

import uuid
from contextlib import aclosing, nullcontext
from dataclasses import dataclass, field
from typing import Any

import anyio

from prism.assembly import assemble_provider_input
from prism.contracts import (
    ContentBlock,
    ErrorInfo,
    Message,
    MessageFinishedEvent,
    ProviderRequest,
    SessionEntry,
    ToolCall,
    Usage,
)
from prism.providers.base import error_info_from_exception
from prism.runtime.context import RunContext
from prism.runtime.options import parse_arguments
from prism.security.limits import tool_arguments_problem


@dataclass(slots=True)
class TurnOutcome:
    """What a provider turn produced. ``error`` is set when it failed;
    ``output_started`` tells whether anything reached listeners first (which
    rules out a retry)."""

    message_id: str
    message: Message | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    invalid_calls: dict[str, str] = field(default_factory=dict)
    usage: Usage = field(default_factory=dict)  # type: ignore[assignment]
    stop_reason: str | None = None
    error: ErrorInfo | None = None
    output_started: bool = False

    def to_record(self) -> dict[str, Any]:
        """Plain JSON data, for an engine that records the turn (``prism.durable``)."""
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_record(cls, record: Any) -> TurnOutcome:
        return cls(**record)


async def assemble_turn(run: RunContext) -> ProviderRequest:
    """Build this turn's provider request from the cached branch context.

    ``run.branch.messages`` already holds the run's input and every tool
    result appended so far, so it goes in whole as ``history``; the list is
    the session's cache and must not be mutated by anything downstream.
    """
    config = run.config
    branch = run.branch
    metadata: dict[str, Any] = {"sessionId": run.session_id, "runId": run.run_id}
    if run.metadata:
        metadata.update(run.metadata)
    request = await assemble_provider_input(
        model=run.current_model,
        input=None,
        history=branch.messages,
        summaries=branch.summaries,
        system_instructions=[*config.system, *run.system] or None,
        tools=run.tool_declarations,
        middleware=config.middleware,
        context_providers=config.context_providers,
        skills=config.skills,
        metadata=metadata,
        session_id=run.session_id,
        run_id=run.run_id,
        turn=run.turn,
        redactor=config.redactor,
        input_builder=config.input_builder,
        prompt_builder=config.prompt_builder,
        **attention_options(run),
    )
    if run.output is not None:
        request = run.output.shape_request(request)
    middleware = config.middleware
    if middleware is not None and middleware.has("provider_request"):
        request = await middleware.run("provider_request", request)
    return request


def attention_options(run: RunContext) -> dict[str, Any]:
    """Attention wiring: the run's compiler (the agent's, narrowed by the run
    overlay), the session's sticky frontier (shared across runs and turns),
    and the callback that emits one ``attention_compiled`` event per mutated
    turn. Empty when the run has no compiler."""
    compiler = run.attention
    if compiler is None:
        return {}
    if run.frontier is None:
        from prism.attention import create_attention_sticky_frontier, restore_attention_frontier

        restored = None
        if compiler.persist_frontier or run.persist_state:
            # Opt-in: resume with the frontier checkpointed on this branch
            # (a durable checkpoint's session state, or the older entry).
            restored = restore_attention_frontier(run.branch.entries)
        if restored is None:
            restored = create_attention_sticky_frontier()
        run.frontier = restored

    def on_report(report: Any) -> None:
        fields = report.to_event()
        fields.pop("sessionId", None)
        fields.pop("runId", None)
        run.emit(fields)

    return {
        "attention_compiler": compiler,
        "attention_sticky": run.frontier,
        "on_attention_report": on_report,
    }


def attention_checkpoint(run: RunContext) -> list[SessionEntry]:
    """The frontier checkpoint to append with the run's next batch: one
    ``custom`` entry when the agent persists the frontier and its key sets
    changed since the last checkpoint, else nothing. Mark it stored with
    :func:`attention_checkpoint_stored` after the append."""
    if run.attention is None:
        return []
    frontier = run.frontier
    if frontier is None or not run.attention.persist_frontier:
        return []
    if run.durable and run.persist_state:
        return []  # the run's step checkpoints carry the frontier instead
    data = frontier.pending_checkpoint()
    if data is None:
        return []
    from prism.attention import frontier_checkpoint_entry

    return [frontier_checkpoint_entry(run.session_id, run.new_entry_id(), data)]  # type: ignore[list-item]


def attention_checkpoint_stored(run: RunContext, checkpoint: list[SessionEntry]) -> None:
    for entry in checkpoint:
        run.frontier.mark_persisted(entry["data"])  # type: ignore[typeddict-item]


class _CallSlot:
    __slots__ = ("arguments", "complete", "id", "name", "parts")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.parts: list[str] = []
        self.arguments: dict[str, Any] | None = None
        self.complete = False


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


async def stream_turn(
    run: RunContext, request: ProviderRequest, message_id: str | None = None
) -> TurnOutcome:
    """Stream one provider response. Never raises for provider faults: they
    come back in ``outcome.error``. Cancellation propagates."""
    emit = run.emit
    outcome = TurnOutcome(message_id=message_id or run.new_entry_id())
    message_id = outcome.message_id
    text: list[str] = []
    thinking: list[str] = []
    signature: str | None = None
    slots: list[_CallSlot] = []
    by_index: dict[int, _CallSlot] = {}
    usage: Usage = {}

    def start() -> None:
        if not outcome.output_started:
            outcome.output_started = True
            emit({"type": "message_started", "role": "assistant", "messageId": message_id})

    provider = run.config.provider_for(run.current_model)
    try:
        # Provider output is untrusted: it is read defensively as plain dicts
        # (an event without a known ``type`` is skipped), not as the
        # ProviderEvent union its protocol promises.
        stream: Any = provider.generate(request)
        # Async generators are closed deterministically when we stop early;
        # plain async iterators (no aclose) are simply dropped.
        closer = aclosing(stream) if hasattr(stream, "aclose") else nullcontext()
        async with closer:
            async for event in stream:
                kind = event.get("type")
                if kind == "content_delta":
                    start()
                    text.append(event["text"])
                    emit(
                        {
                            "type": "message_delta",
                            "messageId": message_id,
                            "delta": {"type": "text", "text": event["text"]},
                        }
                    )
                elif kind == "thinking_delta":
                    start()
                    thinking.append(event["text"])
                    if event.get("signature"):
                        signature = event["signature"]
                    emit(
                        {
                            "type": "message_delta",
                            "messageId": message_id,
                            "delta": {"type": "thinking", "text": event["text"]},
                        }
                    )
                elif kind == "tool_call_delta":
                    start()
                    slot = by_index.get(event["index"])
                    if slot is None:
                        slot = by_index[event["index"]] = _CallSlot()
                        slots.append(slot)
                    if event.get("id"):
                        slot.id = event["id"]
                    if event.get("name"):
                        slot.name += event["name"]
                    if event.get("argumentsDelta"):
                        slot.parts.append(event["argumentsDelta"])
                elif kind == "tool_call":
                    start()
                    complete = event["toolCall"]
                    # A provider may stream a call as deltas and then close it
                    # with the complete call; the complete form wins, once.
                    slot = next(
                        (s for s in slots if s.id is not None and s.id == complete["id"]),
                        None,
                    )
                    if slot is None:
                        slot = _CallSlot()
                        slots.append(slot)
                    slot.id, slot.name, slot.complete = complete["id"], complete["name"], True
                    slot.arguments = dict(complete.get("arguments") or {})
                elif kind == "usage":
                    usage.update(event.get("usage") or Usage())
                elif kind == "done":
                    usage.update(event.get("usage") or Usage())
                    outcome.stop_reason = event.get("stopReason")
                    break
                elif kind == "error":
                    outcome.error = dict(event.get("error") or {"message": "provider error"})  # type: ignore[assignment]
                    break
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as error:
        outcome.error = error_info_from_exception(error, run.config.redactor)
    outcome.usage = usage
    if outcome.error is not None:
        return outcome

    content: list[ContentBlock] = []
    if thinking:
        block: dict[str, Any] = {"type": "thinking", "text": "".join(thinking)}
        if signature is not None:
            block["signature"] = signature
        content.append(block)  # type: ignore[arg-type]
    if text:
        content.append({"type": "text", "text": "".join(text)})
    for slot in slots:
        call_id = slot.id or _new_call_id()
        if slot.complete:
            arguments, problem = slot.arguments or {}, None
        else:
            arguments, problem = parse_arguments("".join(slot.parts))
        if problem is None:
            # One nesting limit at the provider edge: deeper arguments become
            # a tool error for the model, not a failed store or redactor walk.
            problem = tool_arguments_problem(arguments, run.config.redactor)
        if problem is not None:
            arguments = {}
            outcome.invalid_calls[call_id] = problem
        call: ToolCall = {"id": call_id, "name": slot.name, "arguments": arguments}
        outcome.tool_calls.append(call)
        content.append({"type": "tool_call", **call})
    outcome.message = {"role": "assistant", "content": content}
    start()
    finished: MessageFinishedEvent = {
        "type": "message_finished",
        "role": "assistant",
        "messageId": message_id,
        "message": outcome.message,
    }
    if usage:
        finished["usage"] = usage
    if outcome.stop_reason is not None:
        finished["stopReason"] = outcome.stop_reason
    emit(finished)
    return outcome
