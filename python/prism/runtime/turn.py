"""One provider turn: assemble the request, stream the provider, build the
assistant message. The loop around turns lives in ``prism.runtime.loop``.

``assemble_turn`` is the single place the runtime builds a provider request,
so attention compilation and other request shaping plug in here.
"""

from __future__ import annotations

import uuid
from contextlib import aclosing, nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from prism._text import mend_surrogates, mend_value
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
from prism.runtime.calibrate import token_scale
from prism.runtime.context import Emit, RunPort, RunSettings
from prism.runtime.options import parse_arguments
from prism.security.limits import tool_arguments_problem
from prism.security.stream_redaction import StreamRedactor


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


async def assemble_turn(settings: RunSettings, port: RunPort, turn: int) -> ProviderRequest:
    """Build this turn's provider request from the cached branch context.

    ``port.branch.messages`` already holds the run's input and every tool
    result appended so far, so it goes in whole as ``history``; the list is
    the session's cache and must not be mutated by anything downstream.
    """
    config = settings.config
    branch = port.branch
    metadata: dict[str, Any] = {"sessionId": port.session_id, "runId": port.run_id}
    if settings.metadata:
        metadata.update(settings.metadata)
    request = await assemble_provider_input(
        model=settings.model_on(branch),
        input=None,
        history=branch.messages,
        summaries=branch.summaries,
        system_instructions=[*config.system, *settings.system] or None,
        tools=settings.tool_declarations,
        middleware=config.middleware,
        context_providers=config.context_providers,
        skills=config.skills,
        metadata=metadata,
        session_id=port.session_id,
        run_id=port.run_id,
        turn=turn,
        redactor=config.redactor,
        input_builder=config.input_builder,
        prompt_builder=config.prompt_builder,
        **attention_options(settings, port),
    )
    if settings.output is not None:
        request = settings.output.shape_request(request)
    middleware = config.middleware
    if middleware is not None and middleware.has("provider_request"):
        request = await middleware.run("provider_request", request)
    return request


def attention_options(settings: RunSettings, port: RunPort) -> dict[str, Any]:
    """Attention wiring: the run's compiler (the agent's, narrowed by the run
    overlay), the session's sticky frontier (shared across runs and turns),
    and the callback that emits one ``attention_compiled`` event per mutated
    turn. Empty when the run has no compiler."""
    compiler = settings.attention
    if compiler is None:
        return {}
    if port.frontier is None:
        from prism.attention import create_attention_sticky_frontier, restore_attention_frontier

        restored = None
        if compiler.persist_frontier or settings.persist_state:
            # Opt-in: resume with the frontier checkpointed on this branch
            # (a durable checkpoint's session state, or the older entry).
            restored = restore_attention_frontier(port.branch.entries)
        if restored is None:
            restored = create_attention_sticky_frontier()
        port.frontier = restored
    calibration = settings.config.token_calibration
    if calibration is not None:
        # Calibrated from the first request of a session resumed elsewhere.
        port.frontier.token_scale = token_scale(settings, settings.model_on(port.branch))

    def on_report(report: Any) -> None:
        fields = report.to_event()
        fields.pop("sessionId", None)
        fields.pop("runId", None)
        port.emit(fields)

    return {
        "attention_compiler": compiler,
        "attention_sticky": port.frontier,
        "on_attention_report": on_report,
    }


def attention_checkpoint(settings: RunSettings, port: RunPort) -> list[SessionEntry]:
    """The frontier checkpoint to append with the run's next batch: one
    ``custom`` entry when the agent persists the frontier and its key sets
    changed since the last checkpoint, else nothing. Mark it stored with
    :func:`attention_checkpoint_stored` after the append."""
    if settings.attention is None:
        return []
    frontier = port.frontier
    if frontier is None or not settings.attention.persist_frontier:
        return []
    data = frontier.pending_checkpoint()
    if data is None:
        return []
    from prism.attention import frontier_checkpoint_entry

    return [frontier_checkpoint_entry(port.session_id, port.new_entry_id(), data)]  # type: ignore[list-item]


def attention_checkpoint_stored(port: RunPort, checkpoint: list[SessionEntry]) -> None:
    for entry in checkpoint:
        port.frontier.mark_persisted(entry["data"])  # type: ignore[typeddict-item]


class _CallSlot:
    __slots__ = ("arguments", "complete", "id", "name", "parts")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.parts: list[str] = []
        self.arguments: dict[str, Any] | None = None
        self.complete = False


_DeltaKind = Literal["text", "thinking"]


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


class _TurnStream:
    """The assistant message being assembled from one provider stream."""

    __slots__ = (
        "by_index",
        "emit",
        "outcome",
        "redact",
        "signature",
        "slots",
        "text",
        "thinking",
        "usage",
    )

    def __init__(self, outcome: TurnOutcome, emit: Emit, redactor: Any) -> None:
        self.outcome = outcome
        self.emit = emit
        self.text: list[str] = []
        self.thinking: list[str] = []
        # Events are redacted one by one, so a secret split across deltas
        # would pass; each block's deltas go through one stream redactor.
        self.redact: dict[_DeltaKind, StreamRedactor] = {
            "text": StreamRedactor(redactor),
            "thinking": StreamRedactor(redactor),
        }
        self.signature: str | None = None
        self.slots: list[_CallSlot] = []
        self.by_index: dict[int, _CallSlot] = {}
        self.usage: Usage = {}

    def start(self) -> None:
        outcome = self.outcome
        if not outcome.output_started:
            outcome.output_started = True
            self.emit(
                {"type": "message_started", "role": "assistant", "messageId": outcome.message_id}
            )

    def delta(self, kind: _DeltaKind, text: str) -> None:
        self.start()
        text = self.redact[kind].feed(text)
        if text:
            self._emit_delta(kind, text)

    def flush_deltas(self) -> None:
        """Emit what the stream redactors still hold: the blocks are over."""
        for kind, redactor in self.redact.items():
            if redactor.held:
                self._emit_delta(kind, redactor.flush())

    def _emit_delta(self, kind: _DeltaKind, text: str) -> None:
        self.emit(
            {
                "type": "message_delta",
                "messageId": self.outcome.message_id,
                "delta": {"type": kind, "text": text},
            }
        )

    def feed(self, event: Any) -> bool:
        """Take one provider event; True when the stream is over."""
        kind = event.get("type")
        if kind == "content_delta":
            self.text.append(event["text"])
            self.delta("text", event["text"])
        elif kind == "thinking_delta":
            self.thinking.append(event["text"])
            if event.get("signature"):
                self.signature = event["signature"]
            self.delta("thinking", event["text"])
        elif kind == "tool_call_delta":
            self.start()
            self._call_delta(event)
        elif kind == "tool_call":
            self.start()
            self._call(event["toolCall"])
        elif kind == "usage":
            self.usage.update(event.get("usage") or Usage())
        elif kind == "done":
            self.usage.update(event.get("usage") or Usage())
            self.outcome.stop_reason = event.get("stopReason")
            return True
        elif kind == "error":
            self.outcome.error = dict(event.get("error") or {"message": "provider error"})  # type: ignore[assignment]
            return True
        return False

    def _call_delta(self, event: Any) -> None:
        slot = self.by_index.get(event["index"])
        if slot is None:
            slot = self.by_index[event["index"]] = _CallSlot()
            self.slots.append(slot)
        if event.get("id"):
            slot.id = event["id"]
        if event.get("name"):
            slot.name += event["name"]
        if event.get("argumentsDelta"):
            slot.parts.append(event["argumentsDelta"])

    def _call(self, complete: Any) -> None:
        # A provider may stream a call as deltas and then close it with the
        # complete call; the complete form wins, once.
        slot = next((s for s in self.slots if s.id is not None and s.id == complete["id"]), None)
        if slot is None:
            slot = _CallSlot()
            self.slots.append(slot)
        slot.id, slot.name, slot.complete = complete["id"], complete["name"], True
        slot.arguments = dict(complete.get("arguments") or {})

    def finish(self, redactor: Any) -> None:
        """Build the assistant message and emit ``message_finished``."""
        outcome = self.outcome
        content: list[ContentBlock] = []
        # Model output a store cannot encode (half a surrogate pair from a
        # JSON escape) is mended here, once, for every provider: U+FFFD.
        if self.thinking:
            block: dict[str, Any] = {
                "type": "thinking",
                "text": mend_surrogates("".join(self.thinking)),
            }
            if self.signature is not None:
                block["signature"] = self.signature
            content.append(block)  # type: ignore[arg-type]
        if self.text:
            content.append({"type": "text", "text": mend_surrogates("".join(self.text))})
        for slot in self.slots:
            call_id = slot.id or _new_call_id()
            if slot.complete:
                arguments, problem = slot.arguments or {}, None
            else:
                arguments, problem = parse_arguments("".join(slot.parts))
            if problem is None:
                # One nesting limit at the provider edge: deeper arguments become
                # a tool error for the model, not a failed store or redactor walk.
                problem = tool_arguments_problem(arguments, redactor)
            if problem is not None:
                arguments = {}
                outcome.invalid_calls[call_id] = problem
            else:
                arguments = mend_value(arguments)  # within the depth limit now
            call: ToolCall = {"id": call_id, "name": slot.name, "arguments": arguments}
            outcome.tool_calls.append(call)
            content.append({"type": "tool_call", **call})
        outcome.message = {"role": "assistant", "content": content}
        self.start()
        self.flush_deltas()
        finished: MessageFinishedEvent = {
            "type": "message_finished",
            "role": "assistant",
            "messageId": outcome.message_id,
            "message": outcome.message,
        }
        if self.usage:
            finished["usage"] = self.usage
        if outcome.stop_reason is not None:
            finished["stopReason"] = outcome.stop_reason
        self.emit(finished)


async def stream_turn(
    settings: RunSettings, port: RunPort, request: ProviderRequest, message_id: str
) -> TurnOutcome:
    """Stream one provider response. Never raises for provider faults: they
    come back in ``outcome.error``. Cancellation propagates."""
    config = settings.config
    outcome = TurnOutcome(message_id=message_id)
    turn = _TurnStream(outcome, port.emit, config.redactor)
    provider = config.provider_for(settings.model_on(port.branch))
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
                if turn.feed(event):
                    break
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as error:
        outcome.error = error_info_from_exception(error, config.redactor)
    outcome.usage = turn.usage
    if outcome.error is None:
        turn.finish(config.redactor)
    return outcome
