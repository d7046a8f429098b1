"""Session events -> OpenTelemetry spans and metrics.

Everything is driven by the session's event stream, so the run loop knows
nothing about telemetry and an uninstrumented agent pays nothing. Events
reach listeners already redacted by the agent's redactor, which is why the
span attributes, error descriptions and (opt-in) content carry no secret.

A provider turn has no "started" event: its span begins where the previous
step of the run ended (run start, the last tool result of a round, the end
of a compaction, or a turn that asked for no tools) and is opened lazily,
back-dated to that instant, by the first event that belongs to it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from prism import __version__ as _prism_version
from prism.errors import ConfigError
from prism.telemetry._metrics import PrismMetrics

_SCOPE = "prism"

# Semantic-convention attribute names (GenAI conventions where they exist).
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
CONVERSATION = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"
RUN_ID = "prism.run.id"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(slots=True)
class _RunSpans:
    span: Span
    model: Mapping[str, Any]
    turn: Span | None = None
    turn_started_ns: int = 0
    turn_index: int = 0
    results_pending: int = 0
    tools: dict[str, tuple[Span, int, str]] = field(default_factory=dict)
    compaction: Span | None = None


@dataclass(slots=True)
class _SessionState:
    model: Mapping[str, Any]
    run: _RunSpans | None = None
    compaction: Span | None = None
    # The sticky frontier only grows between compactions: a larger count than
    # last time means this turn rewrote the cached prefix (a cache bust).
    reduced: tuple[int, int] = (0, 0)


class Instrumentation:
    """A live instrumentation; call :meth:`uninstrument` to detach it.

    One instance may watch many sessions (an agent's); it keys its state by
    session id, and each session runs at most one run at a time.
    """

    def __init__(
        self,
        *,
        default_model: Mapping[str, Any],
        agent_name: str,
        tracer_provider: Any,
        meter_provider: Any,
        capture_content: bool,
    ) -> None:
        self._tracer = trace.get_tracer(_SCOPE, _prism_version, tracer_provider=tracer_provider)
        meter = metrics.get_meter(_SCOPE, _prism_version, meter_provider=meter_provider)
        self._metrics = PrismMetrics(meter)
        self._default_model = default_model
        self._agent_name = agent_name
        self._capture = capture_content
        self._sessions: dict[str, _SessionState] = {}
        self._detach: list[Callable[[], None]] = []

    def uninstrument(self) -> None:
        for detach in self._detach:
            detach()
        self._detach.clear()

    # --- the listener --------------------------------------------------------------

    def __call__(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        handler = _HANDLERS.get(kind)  # type: ignore[arg-type]
        if handler is None:
            return
        session_id = event.get("sessionId", "")
        state = self._sessions.get(session_id)
        if state is None:
            state = self._sessions[session_id] = _SessionState(model=self._default_model)
        handler(self, state, event)

    # --- runs ----------------------------------------------------------------------

    def _run_started(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        model = state.model
        span = self._tracer.start_span(
            f"invoke_agent {self._agent_name}",
            kind=SpanKind.INTERNAL,
            attributes={
                OPERATION: "invoke_agent",
                AGENT_NAME: self._agent_name,
                PROVIDER: str(model.get("provider", "")),
                REQUEST_MODEL: str(model.get("model", "")),
                CONVERSATION: str(event.get("sessionId", "")),
                RUN_ID: str(event.get("runId", "")),
            },
        )
        state.run = _RunSpans(span=span, model=model, turn_started_ns=time.time_ns())

    def _run_finished(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        run = state.run
        if run is None:
            return
        usage = event.get("usage") or {}
        run.span.set_attributes(
            {
                INPUT_TOKENS: int(usage.get("inputTokens", 0)),
                OUTPUT_TOKENS: int(usage.get("outputTokens", 0)),
                "prism.run.tool_rounds": int(event.get("toolRounds", 0)),
            }
        )
        run.span.set_status(Status(StatusCode.OK))
        run.span.end()
        state.run = None

    def _error(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        error = event.get("error") or {}
        code = str(error.get("code") or "error")
        status = Status(StatusCode.ERROR, str(error.get("message", "")))
        run = state.run
        if run is None:
            return
        now = time.time_ns()
        for span, started, name in run.tools.values():
            span.set_attribute(ERROR_TYPE, code)
            span.set_status(status)
            span.end(end_time=now)
            self._metrics.tool_finished(name, (now - started) / 1e9, error=True)
        run.tools.clear()
        if run.compaction is not None:
            run.compaction.set_status(status)
            run.compaction.end(end_time=now)
            run.compaction = None
        if run.turn is not None:
            run.turn.set_attribute(ERROR_TYPE, code)
            run.turn.set_status(status)
            run.turn.end(end_time=now)
            self._metrics.turn_finished(run.model, (now - run.turn_started_ns) / 1e9, code)
            run.turn = None
        run.span.set_attribute(ERROR_TYPE, code)
        run.span.set_status(status)
        run.span.end(end_time=now)
        state.run = None

    def _model_changed(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        model = event.get("model")
        if isinstance(model, Mapping):
            state.model = model

    # --- provider turns ------------------------------------------------------------

    def _turn(self, run: _RunSpans) -> Span:
        if run.turn is None:
            run.turn_index += 1
            model_id = str(run.model.get("model", ""))
            run.turn = self._tracer.start_span(
                f"chat {model_id}",
                context=trace.set_span_in_context(run.span),
                kind=SpanKind.CLIENT,
                start_time=run.turn_started_ns,
                attributes={
                    OPERATION: "chat",
                    PROVIDER: str(run.model.get("provider", "")),
                    REQUEST_MODEL: model_id,
                    "prism.turn.index": run.turn_index,
                },
            )
        return run.turn

    def _turn_output(self, state: _SessionState, _event: Mapping[str, Any]) -> None:
        if state.run is not None:
            self._turn(state.run)

    def _retry(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        if state.run is None:
            return
        error = event.get("error") or {}
        self._turn(state.run).add_event(
            "prism.retry",
            {
                "prism.retry.attempt": int(event.get("attempt", 0)),
                "prism.retry.delay_ms": int(event.get("delayMs", 0)),
                ERROR_TYPE: str(error.get("code") or "error"),
            },
        )
        self._metrics.retry(state.run.model)

    def _message_finished(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        run = state.run
        if run is None:
            return
        span = self._turn(run)
        usage = event.get("usage") or {}
        message = event.get("message") or {}
        calls = sum(1 for block in message.get("content", ()) if block.get("type") == "tool_call")
        attributes: dict[str, Any] = {
            INPUT_TOKENS: int(usage.get("inputTokens", 0)),
            OUTPUT_TOKENS: int(usage.get("outputTokens", 0)),
            CACHE_READ_TOKENS: int(usage.get("cacheReadTokens", 0)),
            "prism.turn.tool_calls": calls,
        }
        stop = event.get("stopReason")
        if stop:
            attributes[FINISH_REASONS] = (str(stop),)
        if self._capture and message:
            attributes[OUTPUT_MESSAGES] = _json([message])
        span.set_attributes(attributes)
        span.end()
        now = time.time_ns()
        self._metrics.turn_finished(run.model, (now - run.turn_started_ns) / 1e9, None)
        self._metrics.tokens(run.model, usage)
        run.turn = None
        run.results_pending = calls
        # With no tools asked for, whatever comes next (a follow-up turn)
        # starts now; otherwise the round's last tool result starts it.
        run.turn_started_ns = now

    def _attention(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        reduced = (
            int(event.get("droppedThinkingTurns", 0)),
            int(event.get("stubbedToolResults", 0)),
        )
        bust = reduced[0] > state.reduced[0] or reduced[1] > state.reduced[1]
        state.reduced = reduced
        attributes = {
            "prism.attention.used": int(event.get("used", 0)),
            "prism.attention.used_after": int(event.get("usedAfter", 0)),
            "prism.attention.input_cap": int(event.get("inputCap", 0)),
            "prism.attention.dropped_thinking_turns": reduced[0],
            "prism.attention.stubbed_rows": reduced[1],
            "prism.attention.stubbed_bytes": int(event.get("stubbedBytes", 0)),
            "prism.attention.truncated": bool(event.get("truncated", False)),
            "prism.attention.cache_bust": bust,
        }
        if state.run is not None:
            self._turn(state.run).add_event("prism.attention.gate", attributes)
        self._metrics.gate(state.model, bust)

    # --- tools ---------------------------------------------------------------------

    def _tool_call(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        run = state.run
        call = event.get("toolCall") or {}
        if run is None or not call:
            return
        name = str(call.get("name", ""))
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: name,
            TOOL_CALL_ID: str(call.get("id", "")),
        }
        if self._capture:
            attributes[TOOL_ARGUMENTS] = _json(call.get("arguments", {}))
        started = time.time_ns()
        span = self._tracer.start_span(
            f"execute_tool {name}",
            context=trace.set_span_in_context(run.span),
            kind=SpanKind.INTERNAL,
            start_time=started,
            attributes=attributes,
        )
        run.tools[str(call.get("id", ""))] = (span, started, name)

    def _tool_result(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        run = state.run
        result = event.get("result") or {}
        if run is None:
            return
        now = time.time_ns()
        opened = run.tools.pop(str(result.get("toolCallId", "")), None)
        if opened is not None:
            span, started, name = opened
            failed = bool(result.get("isError"))
            if self._capture:
                span.set_attribute(TOOL_RESULT, _json(result.get("value")))
            if failed:
                span.set_attribute(ERROR_TYPE, "tool_error")
                span.set_status(Status(StatusCode.ERROR))
            span.end(end_time=now)
            self._metrics.tool_finished(name, (now - started) / 1e9, error=failed)
        if run.results_pending > 0:
            run.results_pending -= 1
        run.turn_started_ns = now

    # --- compaction ----------------------------------------------------------------

    def _compaction_started(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        trigger = str(event.get("trigger", "manual"))
        parent = trace.set_span_in_context(state.run.span) if state.run is not None else None
        span = self._tracer.start_span(
            "prism.compaction",
            context=parent,
            attributes={
                "prism.compaction.trigger": trigger,
                CONVERSATION: event.get("sessionId", ""),
            },
        )
        if state.run is not None:
            state.run.compaction = span
        else:
            state.compaction = span

    def _compaction_finished(self, state: _SessionState, event: Mapping[str, Any]) -> None:
        run = state.run
        span = run.compaction if run is not None else state.compaction
        if span is None:
            return
        span.set_attribute("prism.compaction.entry_id", str(event.get("entryId", "")))
        span.set_status(Status(StatusCode.OK))
        span.end()
        self._metrics.compaction(str(event.get("trigger", "manual")))
        # A compaction rewrites the prefix: the frontier starts over.
        state.reduced = (0, 0)
        if run is not None:
            run.compaction = None
            run.turn_started_ns = time.time_ns()
        else:
            state.compaction = None


_Handler = Callable[[Instrumentation, _SessionState, Mapping[str, Any]], None]
_HANDLERS: dict[str, _Handler] = {
    "run_started": Instrumentation._run_started,
    "run_finished": Instrumentation._run_finished,
    "error": Instrumentation._error,
    "model_changed": Instrumentation._model_changed,
    "message_started": Instrumentation._turn_output,
    "retry_scheduled": Instrumentation._retry,
    "message_finished": Instrumentation._message_finished,
    "attention_compiled": Instrumentation._attention,
    "tool_call": Instrumentation._tool_call,
    "tool_result": Instrumentation._tool_result,
    "compaction_started": Instrumentation._compaction_started,
    "compaction_finished": Instrumentation._compaction_finished,
}


def instrument(
    target: Any, *, tracer_provider: Any, meter_provider: Any, capture_content: bool
) -> Instrumentation:
    from prism.runtime.agent import Agent
    from prism.runtime.session import AgentSession

    if isinstance(target, Agent):
        agent = target
    elif isinstance(target, AgentSession):
        agent = target.agent
    else:
        raise ConfigError(
            f"instrument() takes an Agent or an AgentSession, got {type(target).__name__}"
        )
    if not isinstance(capture_content, bool):
        raise ConfigError("capture_content must be a bool")
    model = agent.config.model
    name = str((agent.config.metadata or {}).get("name") or "prism")
    instrumentation = Instrumentation(
        default_model=model,
        agent_name=name,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
    )
    instrumentation._detach.append(target.subscribe(instrumentation))
    return instrumentation
