"""Session events -> OpenTelemetry spans and metrics.

Everything is driven by the session's event stream, so the run loop knows
nothing about telemetry and an uninstrumented agent pays nothing. Events
reach listeners already redacted by the agent's redactor, which is why the
span attributes, error descriptions and (opt-in) content carry no secret.

A provider turn has no "started" event: its span begins where the previous
step of the run ended (run start, the last tool result of a round, the end
of a compaction, or a turn that asked for no tools) and is opened lazily,
back-dated to that instant, by the first event that belongs to it.

State is kept by run id, not by session id: two runs of one session can
overlap (a dropped stream's run still closing while the next one starts, or
two handles on one session), and each run's events must end its own spans.
A run's state is freed when the run ends; what outlives runs (the attention
frontier counts per session) sits in a bounded LRU, so a long-lived process
that sees millions of sessions keeps a fixed amount.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

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
APPROVAL_ID = "prism.approval.id"
APPROVAL_DECISION = "prism.approval.decision"
APPROVAL_ACTION_KIND = "prism.approval.action.kind"
APPROVAL_ELSEWHERE = "prism.approval.requested_elsewhere"
# Action kinds an approval may name (prism.security.execution, plus "tool"
# for a name-gated tool); anything else is content and stays out.
APPROVAL_KINDS: Final = frozenset(
    {"tool", "read", "write", "edit", "delete", "move", "shell", "network"}
)
TOOL_UNREGISTERED = "prism.tool.unregistered"

# Sessions whose attention-frontier counts are remembered between runs. One
# evicted behaves like a session resumed in a new process: its next gate trip
# counts as a cache bust, which it usually is after that long.
MAX_TRACKED_SESSIONS: Final = 4096
# The metric value for a tool name the agent does not register: a name the
# model invented is content (and would make the metric's cardinality unbounded).
UNREGISTERED_TOOL: Final = "(unregistered)"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(slots=True)
class _RunSpans:
    span: Span
    model: Mapping[str, Any]
    session_id: str
    turn: Span | None = None
    turn_started_ns: int = 0
    turn_index: int = 0
    results_pending: int = 0
    tools: dict[str, tuple[Span, int, str]] = field(default_factory=dict)
    compaction: Span | None = None


class Instrumentation:
    """A live instrumentation; call :meth:`uninstrument` to detach it.

    One instance may watch many sessions (an agent's) and overlapping runs;
    it keys span state by run id and frees it when the run ends.
    """

    def __init__(
        self,
        *,
        default_model: Mapping[str, Any],
        agent_name: str,
        is_registered_tool: Callable[[str], bool],
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
        self._is_registered_tool = is_registered_tool
        # Open runs by run id; a run's entry goes when it finishes or fails.
        self._runs: dict[str, _RunSpans] = {}
        # Compactions outside a run, by session id, until they finish.
        self._compactions: dict[str, Span] = {}
        # The sticky frontier only grows between compactions: a larger count
        # than last time means this turn rewrote the cached prefix (a cache
        # bust). Kept per session across runs, least recently used first out.
        self._frontiers: OrderedDict[str, tuple[int, int]] = OrderedDict()
        # Approval waits by approval id, from request to decision: they
        # outlive the paused run (the decision comes in a later, resumed run).
        self._waits: OrderedDict[str, Span] = OrderedDict()
        self._detach: list[Callable[[], None]] = []
        # A sub-agent's session id -> the parent's tool span it runs under
        # (prism.subagents): its run span nests there. Dropped when it stops.
        # The span is named after the child.
        self._subagent_parents: dict[str, tuple[Span, str]] = {}

    def uninstrument(self) -> None:
        for detach in self._detach:
            detach()
        self._detach.clear()
        # Runs still open will send no more events here: end their spans now
        # rather than keep them (and their state) forever.
        now = time.time_ns()
        for run in self._runs.values():
            for span, _started, _name in run.tools.values():
                span.end(end_time=now)
            for open_span in (run.compaction, run.turn, run.span):
                if open_span is not None:
                    open_span.end(end_time=now)
        self._runs.clear()
        for span in self._compactions.values():
            span.end(end_time=now)
        self._compactions.clear()
        for wait in self._waits.values():
            wait.set_attribute(APPROVAL_DECISION, "pending")
            wait.end(end_time=now)
        self._waits.clear()

    @property
    def tracked(self) -> tuple[int, int]:
        """``(open runs, sessions with remembered frontier counts)``: what
        this instrumentation holds right now (bounded; see the module doc)."""
        return len(self._runs), len(self._frontiers)

    @property
    def waiting(self) -> int:
        """Approval waits open (requested here, not decided yet; bounded)."""
        return len(self._waits)

    # --- the listener --------------------------------------------------------------

    def __call__(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        handler = _HANDLERS.get(kind)  # type: ignore[arg-type]
        if handler is None:
            return
        run_id = event.get("runId")
        run = self._runs.get(run_id) if isinstance(run_id, str) else None
        handler(self, run, event)

    def _status(self, message: object) -> Status:
        # An error message may quote the prompt or the model's output (a
        # provider echoing the request): content, so only with capture on.
        return Status(StatusCode.ERROR, str(message or "") if self._capture else None)

    # --- runs ----------------------------------------------------------------------

    def _run_started(self, _run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        announced = event.get("model")
        model = announced if isinstance(announced, Mapping) else self._default_model
        run_id = str(event.get("runId", ""))
        parent, name = self._subagent_parents.get(
            str(event.get("sessionId", "")), (None, self._agent_name)
        )
        span = self._tracer.start_span(
            f"invoke_agent {name}",
            context=trace.set_span_in_context(parent) if parent is not None else None,
            kind=SpanKind.INTERNAL,
            attributes={
                OPERATION: "invoke_agent",
                AGENT_NAME: name,
                PROVIDER: str(model.get("provider", "")),
                REQUEST_MODEL: str(model.get("model", "")),
                CONVERSATION: str(event.get("sessionId", "")),
                RUN_ID: run_id,
            },
        )
        self._runs[run_id] = _RunSpans(
            span=span,
            model=model,
            session_id=str(event.get("sessionId", "")),
            turn_started_ns=time.time_ns(),
        )

    def _run_finished(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        if run is None:
            return
        self._runs.pop(str(event.get("runId", "")), None)
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

    def _error(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        error = event.get("error") or {}
        code = str(error.get("code") or "error")
        status = self._status(error.get("message"))
        if run is None:
            return
        self._runs.pop(str(event.get("runId", "")), None)
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

    def _model_changed(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        # Between runs the next run_started carries the model; inside a run
        # the change applies to that run's later turns.
        model = event.get("model")
        if run is not None and isinstance(model, Mapping):
            run.model = model

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

    def _turn_output(self, run: _RunSpans | None, _event: Mapping[str, Any]) -> None:
        if run is not None:
            self._turn(run)

    def _retry(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        if run is None:
            return
        error = event.get("error") or {}
        self._turn(run).add_event(
            "prism.retry",
            {
                "prism.retry.attempt": int(event.get("attempt", 0)),
                "prism.retry.delay_ms": int(event.get("delayMs", 0)),
                ERROR_TYPE: str(error.get("code") or "error"),
            },
        )
        self._metrics.retry(run.model)

    def _message_finished(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
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

    def _remember_frontier(self, session_id: str, reduced: tuple[int, int]) -> tuple[int, int]:
        """Store ``reduced`` for the session; return what was stored before."""
        frontiers = self._frontiers
        before = frontiers.pop(session_id, (0, 0))
        frontiers[session_id] = reduced
        if len(frontiers) > MAX_TRACKED_SESSIONS:
            frontiers.popitem(last=False)
        return before

    def _attention(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        reduced = (
            int(event.get("droppedThinkingTurns", 0)),
            int(event.get("stubbedToolResults", 0)),
        )
        before = self._remember_frontier(str(event.get("sessionId", "")), reduced)
        bust = reduced[0] > before[0] or reduced[1] > before[1]
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
        if run is not None:
            self._turn(run).add_event("prism.attention.gate", attributes)
        self._metrics.gate(run.model if run is not None else self._default_model, bust)

    # --- tools ---------------------------------------------------------------------

    def _tool_call(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        call = event.get("toolCall") or {}
        if run is None or not call:
            return
        name = str(call.get("name", ""))
        registered = self._is_registered_tool(name)
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_CALL_ID: str(call.get("id", "")),
        }
        # A name the agent does not register is whatever the model wrote:
        # content, kept out of the span (name and attributes) unless captured.
        shown = registered or self._capture
        if shown:
            attributes[TOOL_NAME] = name
        if not registered:
            attributes[TOOL_UNREGISTERED] = True
        if self._capture:
            attributes[TOOL_ARGUMENTS] = _json(call.get("arguments", {}))
        started = time.time_ns()
        span = self._tracer.start_span(
            f"execute_tool {name}" if shown else "execute_tool",
            context=trace.set_span_in_context(run.span),
            kind=SpanKind.INTERNAL,
            start_time=started,
            attributes=attributes,
        )
        run.tools[str(call.get("id", ""))] = (
            span,
            started,
            name if registered else UNREGISTERED_TOOL,
        )

    def _tool_result(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
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

    # --- sub-agents ----------------------------------------------------------------

    def _subagent_started(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        opened = run.tools.get(str(event.get("toolCallId", ""))) if run is not None else None
        if opened is None:
            return
        if len(self._subagent_parents) >= MAX_TRACKED_SESSIONS:
            self._subagent_parents.pop(next(iter(self._subagent_parents)))
        child = str(event.get("child", "")) or self._agent_name
        self._subagent_parents[str(event.get("childSessionId", ""))] = (opened[0], child)

    def _subagent_stopped(self, _run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        self._subagent_parents.pop(str(event.get("childSessionId", "")), None)

    # --- approvals -----------------------------------------------------------------

    def _approval_attributes(self, call_id: str, tool: str) -> dict[str, Any]:
        attributes: dict[str, Any] = {OPERATION: "await_approval", TOOL_CALL_ID: call_id}
        if self._is_registered_tool(tool) or self._capture:
            attributes[TOOL_NAME] = tool
        return attributes

    def _approval_requested(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        """A span per wait, from the request to the decision. Its attributes
        are ids, the tool's (registered) name and the action's kind: never
        the arguments, paths, argv or the reason, which are content."""
        approval = event.get("approval") or {}
        approval_id = str(approval.get("id", ""))
        if not approval_id:
            return
        attributes = self._approval_attributes(
            str(approval.get("toolCallId", "")), str(approval.get("tool", ""))
        )
        attributes[APPROVAL_ID] = approval_id
        action = approval.get("action")
        kind = action.get("kind") if isinstance(action, Mapping) else None
        if kind in APPROVAL_KINDS:
            attributes[APPROVAL_ACTION_KIND] = kind
        if run is not None:
            attributes[RUN_ID] = str(event.get("runId", ""))
        span = self._tracer.start_span(
            "prism.approval.wait",
            context=trace.set_span_in_context(run.span) if run is not None else None,
            attributes=attributes,
        )
        replaced = self._waits.pop(approval_id, None)
        if replaced is not None:
            replaced.end()
        self._waits[approval_id] = span
        if len(self._waits) > MAX_TRACKED_SESSIONS:
            _old_id, oldest = self._waits.popitem(last=False)
            oldest.set_attribute(APPROVAL_DECISION, "pending")
            oldest.end()

    def _approval_decided(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        """End the wait with its outcome; a request made in another process
        (the run paused there) gets a span of its own at the decision."""
        approval_id = str(event.get("approvalId", ""))
        decision = str(event.get("decision", ""))
        span = self._waits.pop(approval_id, None)
        if span is None:
            call_id = str(event.get("toolCallId", ""))
            attributes: dict[str, Any] = {OPERATION: "await_approval", TOOL_CALL_ID: call_id}
            attributes.update({APPROVAL_ID: approval_id, APPROVAL_ELSEWHERE: True})
            span = self._tracer.start_span(
                "prism.approval.wait",
                context=trace.set_span_in_context(run.span) if run is not None else None,
                attributes=attributes,
            )
        if decision in ("approve", "deny", "edit"):
            span.set_attribute(APPROVAL_DECISION, decision)
        span.set_status(Status(StatusCode.OK))
        span.end()

    # --- compaction ----------------------------------------------------------------

    def _compaction_started(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        trigger = str(event.get("trigger", "manual"))
        parent = trace.set_span_in_context(run.span) if run is not None else None
        span = self._tracer.start_span(
            "prism.compaction",
            context=parent,
            attributes={
                "prism.compaction.trigger": trigger,
                CONVERSATION: event.get("sessionId", ""),
            },
        )
        session_id = str(event.get("sessionId", ""))
        if run is not None:
            run.compaction = span
        else:
            replaced = self._compactions.pop(session_id, None)
            if replaced is not None:  # its finish never came; do not keep it open
                replaced.end()
            self._compactions[session_id] = span

    def _compaction_finished(self, run: _RunSpans | None, event: Mapping[str, Any]) -> None:
        session_id = str(event.get("sessionId", ""))
        if run is not None:
            span = run.compaction
        else:
            span = self._compactions.pop(session_id, None)
        if span is None:
            return
        span.set_attribute("prism.compaction.entry_id", str(event.get("entryId", "")))
        span.set_status(Status(StatusCode.OK))
        span.end()
        self._metrics.compaction(str(event.get("trigger", "manual")))
        # A compaction rewrites the prefix: the frontier starts over.
        self._frontiers.pop(session_id, None)
        if run is not None:
            run.compaction = None
            run.turn_started_ns = time.time_ns()


_Handler = Callable[[Instrumentation, _RunSpans | None, Mapping[str, Any]], None]
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
    "subagent_started": Instrumentation._subagent_started,
    "subagent_stopped": Instrumentation._subagent_stopped,
    "approval_requested": Instrumentation._approval_requested,
    "approval_decided": Instrumentation._approval_decided,
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
    tools = agent.config.tools
    instrumentation = Instrumentation(
        default_model=model,
        agent_name=name,
        is_registered_tool=lambda tool_name: tools.get(tool_name) is not None,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
    )
    instrumentation._detach.append(target.subscribe(instrumentation))
    return instrumentation
