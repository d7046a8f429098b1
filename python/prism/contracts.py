"""Wire shapes: every JSON value Prism reads or writes, as TypedDicts.

Keys are the original's camelCase keys so session files, ``--mode json``
output and RPC traffic stay byte-compatible with the TypeScript Prism.
Values are plain dicts at run time; these types only describe them.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

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


# --- provider requests and events --------------------------------------------


class ProviderRequest(TypedDict):
    model: ModelConfig
    messages: list[Message]
    tools: NotRequired[list[ToolDeclaration]]
    options: NotRequired[dict[str, JsonValue]]
    metadata: NotRequired[dict[str, JsonValue]]


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
    "model_changed",
    "extension_error",
    "error",
    "run_finished",
]


class AgentEvent(TypedDict, total=False):
    type: AgentEventType
    sessionId: str
    runId: str
    role: Role
    messageId: str
    delta: dict[str, JsonValue]
    message: Message
    toolCall: ToolCall
    result: ToolResult
    attempt: int
    delayMs: int
    error: ErrorInfo
    usage: Usage
    entryId: str
    trigger: str
    summary: str
    model: ModelConfig
    used: int
    usedAfter: int
    inputCap: int
    triggerRatio: float
    droppedThinkingTurns: int
    stubbedToolResults: int
    stubbedBytes: int
    truncated: bool
