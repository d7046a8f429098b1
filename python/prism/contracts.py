"""Wire shapes: every JSON value Prism reads or writes, as TypedDicts.

Keys are the original's camelCase keys so session files, ``--mode json``
output and RPC traffic stay byte-compatible with the TypeScript Prism.
Values are plain dicts at run time; these types only describe them.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NotRequired, TypeAlias, TypedDict

JsonValue: TypeAlias = Any
"""Any JSON-compatible value (dict/list/str/int/float/bool/None)."""

Role = Literal["system", "user", "assistant", "tool"]


# --- content blocks ---------------------------------------------------------


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ImageBlock(TypedDict):
    type: Literal["image"]
    url: NotRequired[str]
    data: NotRequired[str]
    mimeType: NotRequired[str]


class ThinkingBlock(TypedDict):
    type: Literal["thinking"]
    text: str
    signature: NotRequired[str]


class ToolCallBlock(TypedDict):
    type: Literal["tool_call"]
    id: str
    name: str
    arguments: dict[str, JsonValue]


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    toolCallId: str
    name: str
    result: JsonValue
    isError: NotRequired[bool]
    metadata: NotRequired[dict[str, JsonValue]]


ContentBlock: TypeAlias = TextBlock | ImageBlock | ThinkingBlock | ToolCallBlock | ToolResultBlock


class Message(TypedDict):
    role: Role
    content: list[ContentBlock]
    id: NotRequired[str]
    name: NotRequired[str]
    metadata: NotRequired[dict[str, JsonValue]]


# --- models and usage -------------------------------------------------------


class ModelLimits(TypedDict, total=False):
    contextWindow: int
    maxOutputTokens: int


class ModelPricing(TypedDict, total=False):
    """USD per million tokens."""

    input: float
    output: float
    cacheRead: float
    cacheWrite: float


class ModelConfig(TypedDict):
    provider: str
    model: str
    input: NotRequired[list[Literal["text", "image"]]]
    """What the model accepts as input; absent means text and images. A model
    listed as ``["text"]`` gets a short note in place of each tool image."""
    limits: NotRequired[ModelLimits]
    pricing: NotRequired[ModelPricing]
    options: NotRequired[dict[str, JsonValue]]


class Usage(TypedDict, total=False):
    inputTokens: int
    outputTokens: int
    cacheReadTokens: int
    cacheWriteTokens: int
    reasoningTokens: int
    totalTokens: int


class ErrorInfo(TypedDict):
    message: str
    code: NotRequired[str]
    status: NotRequired[int]
    retryable: NotRequired[bool]
    retryAfterMs: NotRequired[int]
    details: NotRequired[dict[str, JsonValue]]


# --- tools ------------------------------------------------------------------


class ToolDeclaration(TypedDict):
    """What a provider sees of a tool."""

    name: str
    description: NotRequired[str]
    parameters: NotRequired[dict[str, JsonValue]]


class ToolCall(TypedDict):
    id: str
    name: str
    arguments: dict[str, JsonValue]


class ToolResult(TypedDict):
    toolCallId: str
    name: str
    value: JsonValue
    isError: NotRequired[bool]
    metadata: NotRequired[dict[str, JsonValue]]
    images: NotRequired[list[ImageBlock]]
    """Images the tool returned next to ``value`` (``data`` base64 with a
    ``mimeType``); stored as ``image`` blocks right after the ``tool_result``
    block in the same tool message."""


# --- provider requests and events --------------------------------------------


class ProviderRequest(TypedDict):
    model: ModelConfig
    messages: list[Message]
    tools: NotRequired[list[ToolDeclaration]]
    options: NotRequired[dict[str, JsonValue]]
    metadata: NotRequired[dict[str, JsonValue]]


STABLE_PREFIX_METADATA: Final = "stablePrefixMessages"
"""Request ``metadata`` key set by assembly when the attention gate ran: an
int ``n`` saying ``messages[:n]`` are unchanged since the session's previous
request (the gate's record of what it sent), so a provider with explicit
prompt caching puts its breakpoint at ``messages[n - 1]``. Absent when the
gate has no claim (no gate, or its first request)."""


class ContentDeltaEvent(TypedDict):
    type: Literal["content_delta"]
    text: str


class ThinkingDeltaEvent(TypedDict):
    type: Literal["thinking_delta"]
    text: str
    signature: NotRequired[str]


class ToolCallDeltaEvent(TypedDict):
    """A fragment of a streamed tool call; fragments with the same index join."""

    type: Literal["tool_call_delta"]
    index: int
    id: NotRequired[str]
    name: NotRequired[str]
    argumentsDelta: NotRequired[str]


class ToolCallEvent(TypedDict):
    type: Literal["tool_call"]
    toolCall: ToolCall


class UsageEvent(TypedDict):
    type: Literal["usage"]
    usage: Usage


class DoneEvent(TypedDict):
    type: Literal["done"]
    stopReason: NotRequired[str]
    usage: NotRequired[Usage]


class ProviderErrorEvent(TypedDict):
    type: Literal["error"]
    error: ErrorInfo


ProviderEvent: TypeAlias = (
    ContentDeltaEvent
    | ThinkingDeltaEvent
    | ToolCallDeltaEvent
    | ToolCallEvent
    | UsageEvent
    | DoneEvent
    | ProviderErrorEvent
)


# --- session entries ----------------------------------------------------------


class _EntryBase(TypedDict):
    id: str
    sessionId: str
    parentId: str | None
    createdAt: NotRequired[str]
    metadata: NotRequired[dict[str, JsonValue]]


class MessageEntry(_EntryBase):
    kind: Literal["message"]
    message: Message


class SummaryEntry(_EntryBase):
    kind: Literal["summary"]
    summary: str


class ModelChangeEntry(_EntryBase):
    kind: Literal["model_change"]
    model: ModelConfig


class CustomEntry(_EntryBase):
    kind: Literal["custom"]
    customType: str
    data: NotRequired[JsonValue]


class CompactionEntryData(TypedDict):
    throughEntryId: str | None
    keepEntryIds: list[str]
    strategy: str
    trigger: str


class CompactionEntry(_EntryBase):
    kind: Literal["compaction"]
    summary: str
    data: CompactionEntryData


class LabelEntry(_EntryBase):
    kind: Literal["label"]
    label: str
    targetId: NotRequired[str]


SessionEntry: TypeAlias = (
    MessageEntry | SummaryEntry | ModelChangeEntry | CustomEntry | CompactionEntry | LabelEntry
)


class SessionEntryParseError(TypedDict):
    """One quarantined line of a session file (1-based line number)."""

    line: int
    reason: str
    raw: str


# --- agent events ---------------------------------------------------------------
# The runtime owns the full union and its order (docs/events.md); every event
# is a dict with a ``type`` key and, inside a run, ``sessionId`` and ``runId``.

# The events a tool may emit (tools/context.py); the runtime orders the
# others. They close the union below.
ToolEventType = Literal[
    "file_changed",
    "command_started",
    "command_finished",
    "plan_changed",
    "subagent_started",
    "subagent_stopped",
]

AgentEventType = Literal[
    "run_started",
    "message_started",
    "message_delta",
    "message_finished",
    "tool_call",
    "tool_result",
    "retry_scheduled",
    "compaction_started",
    "compaction_finished",
    "attention_compiled",
    "tokens_calibrated",
    "calibration_warning",
    "model_changed",
    "extension_error",
    "checkpoint_warning",
    "approval_requested",
    "approval_decided",
    "error",
    "run_finished",
    ToolEventType,
]


class _AgentEventBase(TypedDict):
    # ``sessionId`` is on every event a listener sees; the session's event
    # hub adds it (and ``runId``) last, so the wire key order stays
    # ``type, <payload>, sessionId, runId``. It is NotRequired only because
    # the runtime builds events before the hub stamps them.
    sessionId: NotRequired[str]
    runId: NotRequired[str]
    """Present inside a run (absent on e.g. ``model_changed`` between runs)."""


class RunStartedEvent(_AgentEventBase):
    type: Literal["run_started"]
    model: NotRequired[ModelConfig]
    """The run's model: its override, else the branch's latest model change,
    else the agent's."""


class MessageStartedEvent(_AgentEventBase):
    type: Literal["message_started"]
    role: Literal["assistant"]
    messageId: str


class MessageDelta(TypedDict):
    type: Literal["text", "thinking"]
    text: str


class MessageDeltaEvent(_AgentEventBase):
    type: Literal["message_delta"]
    messageId: str
    delta: MessageDelta


class MessageFinishedEvent(_AgentEventBase):
    type: Literal["message_finished"]
    role: Literal["assistant"]
    messageId: str
    message: Message
    usage: NotRequired[Usage]
    stopReason: NotRequired[str]


class ToolCallStartedEvent(_AgentEventBase):
    """``type: "tool_call"``: a tool call starts executing."""

    type: Literal["tool_call"]
    toolCall: ToolCall


class ToolResultEvent(_AgentEventBase):
    type: Literal["tool_result"]
    result: ToolResult


class RetryScheduledEvent(_AgentEventBase):
    type: Literal["retry_scheduled"]
    attempt: int
    delayMs: int
    error: ErrorInfo


CompactionTrigger = Literal["manual", "auto"]


class CompactionStartedEvent(_AgentEventBase):
    type: Literal["compaction_started"]
    trigger: CompactionTrigger


class CompactionFinishedEvent(_AgentEventBase):
    type: Literal["compaction_finished"]
    trigger: CompactionTrigger
    entryId: str
    summary: str


class AttentionCompiledEvent(_AgentEventBase):
    """Counts only, never text (docs/attention.md)."""

    type: Literal["attention_compiled"]
    used: int
    usedAfter: int
    inputCap: int
    triggerRatio: float
    droppedThinkingTurns: int
    stubbedToolResults: int
    stubbedBytes: int
    truncated: bool
    tokenScale: NotRequired[float]
    """Present when a calibrated session's gate divided its cap by it."""


class TokensCalibratedEvent(_AgentEventBase):
    """An agent with ``token_calibration`` learned from a turn's billed input
    (docs/attention.md). Counts only, never text."""

    type: Literal["tokens_calibrated"]
    model: str
    """``"provider/model"``: what the calibration learns under."""
    turns: int
    ratios: dict[str, float]
    """Billed tokens per estimated token by content kind: prose, code, tool."""
    scale: float
    """Billed per estimated tokens for this turn's mix: what the next budget
    decisions multiply their estimates by."""
    estimatedTokens: int
    """The plain (chars/4) estimate of the request."""
    calibratedTokens: int
    """The calibrated estimate of the request before this turn was learned."""
    reportedTokens: int


class CalibrationWarningEvent(_AgentEventBase):
    """The session's token-calibration record could not be read; the run
    goes on without it (docs/attention.md). Never carries the record."""

    type: Literal["calibration_warning"]
    entryId: str
    message: str


class ModelChangedEvent(_AgentEventBase):
    type: Literal["model_changed"]
    model: ModelConfig
    entryId: str


class ExtensionErrorEvent(_AgentEventBase):
    type: Literal["extension_error"]
    source: Literal["listener", "middleware"]
    hook: NotRequired[str]
    """The failing middleware's hook (``source == "middleware"`` only)."""
    error: ErrorInfo


class CheckpointWarningEvent(_AgentEventBase):
    """A resumed run dropped a malformed checkpoint field: its name and why,
    never its value."""

    type: Literal["checkpoint_warning"]
    field: str
    message: str


class PendingApproval(TypedDict):
    """A tool call a paused run waits on (docs/approvals.md)."""

    id: str
    toolCallId: str
    tool: str
    arguments: dict[str, Any]
    """As the session store keeps them (redacted when secrets are set)."""
    reason: str
    action: NotRequired[dict[str, Any]]
    """The execution action's context (kind, paths, argv, cwd), if any."""


class ApprovalRequestedEvent(_AgentEventBase):
    """A tool call needs a human; the durable run ends paused after its round."""

    type: Literal["approval_requested"]
    approval: PendingApproval


class ApprovalDecidedEvent(_AgentEventBase):
    """A resumed run applied a human's decision to a pending approval."""

    type: Literal["approval_decided"]
    approvalId: str
    toolCallId: str
    decision: Literal["approve", "deny", "edit"]
    reason: NotRequired[str]


class RunErrorEvent(_AgentEventBase):
    """``type: "error"``: the run failed or was aborted (its last event)."""

    type: Literal["error"]
    error: ErrorInfo


class RunFinishedEvent(_AgentEventBase):
    type: Literal["run_finished"]
    usage: Usage
    toolRounds: int
    stopReason: NotRequired[str]


# --- coding lifecycle events (prism.coding; docs/coding.md) -------------------
# Emitted by the coding tools through their ``on_event`` callback. They say
# what happened, never file content or raw output.


class FileChangedEvent(_AgentEventBase):
    type: Literal["file_changed"]
    path: str
    """Relative to the workspace root."""
    kind: Literal["created", "modified", "deleted"]
    bytes: NotRequired[int]
    digest: NotRequired[str]
    """``sha256:<hex>`` of the new content."""
    toolCallId: NotRequired[str]


class CommandStartedEvent(_AgentEventBase):
    type: Literal["command_started"]
    argv: list[str]
    """Redacted with the configured secrets."""
    cwd: str
    toolCallId: NotRequired[str]


class CommandFinishedEvent(_AgentEventBase):
    type: Literal["command_finished"]
    argv: list[str]
    exitCode: int | None
    """``None`` when the command was killed (timeout, output flood)."""
    timedOut: bool
    durationMs: float
    toolCallId: NotRequired[str]


class PlanTodo(TypedDict):
    content: str
    status: Literal["pending", "in_progress", "completed"]


class PlanChangedEvent(_AgentEventBase):
    type: Literal["plan_changed"]
    todos: list[PlanTodo]
    counts: dict[str, int]
    path: NotRequired[str]
    digest: NotRequired[str]
    toolCallId: NotRequired[str]


# --- sub-agent lifecycle events (prism.subagents; docs/subagents.md) ----------
# Emitted on the parent's session by the supervisor's delegation tool; they
# carry ids, names and counts. The task and any error text pass the parent
# agent's redactor like every event.

SubagentOutcome = Literal["success", "failure", "abort", "rejected", "suspended"]


class SubagentStartedEvent(_AgentEventBase):
    type: Literal["subagent_started"]
    delegationId: str
    child: str
    """The child's name in the supervisor's catalog."""
    childSessionId: str
    toolCallId: str
    resumed: bool
    """True when the child continues from its own checkpoints."""
    task: NotRequired[str]
    """The task, at most 200 characters of it."""


class SubagentStoppedEvent(_AgentEventBase):
    type: Literal["subagent_stopped"]
    delegationId: str
    child: str
    toolCallId: str
    outcome: SubagentOutcome
    """``suspended`` is not terminal: the child waits for approval."""
    childSessionId: NotRequired[str]
    """Absent for a rejection before the child existed."""
    reason: NotRequired[str]
    usage: NotRequired[Usage]
    toolRounds: NotRequired[int]
    pendingApprovals: NotRequired[int]


AgentEvent: TypeAlias = (
    RunStartedEvent
    | MessageStartedEvent
    | MessageDeltaEvent
    | MessageFinishedEvent
    | ToolCallStartedEvent
    | ToolResultEvent
    | RetryScheduledEvent
    | CompactionStartedEvent
    | CompactionFinishedEvent
    | AttentionCompiledEvent
    | TokensCalibratedEvent
    | CalibrationWarningEvent
    | ModelChangedEvent
    | ExtensionErrorEvent
    | CheckpointWarningEvent
    | ApprovalRequestedEvent
    | ApprovalDecidedEvent
    | RunErrorEvent
    | RunFinishedEvent
    | FileChangedEvent
    | CommandStartedEvent
    | CommandFinishedEvent
    | PlanChangedEvent
    | SubagentStartedEvent
    | SubagentStoppedEvent
)
"""One agent event; narrow on ``event["type"]`` (docs/events.md)."""
