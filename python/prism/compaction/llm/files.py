"""File operations seen in tool calls: which paths the agent read and changed.

A summary loses detail; the list of files a session touched is cheap to keep
exactly, so the LLM strategy records it in the compaction entry
(``readFiles``/``modifiedFiles``) and, by default, appends it to the summary.
Only tool calls named ``read``, ``write`` and ``edit`` with a string ``path``
argument count (the coding tools' names); anything else is ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prism.contracts import Message, SessionEntry

READ_TOOLS: frozenset[str] = frozenset({"read"})
WRITE_TOOLS: frozenset[str] = frozenset({"write"})
EDIT_TOOLS: frozenset[str] = frozenset({"edit"})
_FILE_TOOLS = READ_TOOLS | WRITE_TOOLS | EDIT_TOOLS


@dataclass(slots=True)
class FileOperations:
    """Paths by operation, in first-seen order. Mutable: the strategy folds a
    previous compaction's lists and new tool calls into one value."""

    read: dict[str, None] = field(default_factory=dict)
    written: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)

    def add_call(self, name: str, arguments: object) -> None:
        if name not in _FILE_TOOLS or not isinstance(arguments, Mapping):
            return
        path = arguments.get("path")
        if not isinstance(path, str) or not path:
            return
        if name in READ_TOOLS:
            self.read[path] = None
        elif name in WRITE_TOOLS:
            self.written[path] = None
        else:
            self.edited[path] = None

    def add_previous(self, data: object) -> None:
        """Carry a previous compaction entry's ``readFiles``/``modifiedFiles``
        forward, so the lists cover the whole branch and not one window."""
        if not isinstance(data, Mapping):
            return
        for key, target in (("readFiles", self.read), ("modifiedFiles", self.edited)):
            values = data.get(key)
            if isinstance(values, list):
                for value in values:
                    if isinstance(value, str) and value:
                        target[value] = None

    @property
    def read_files(self) -> list[str]:
        """Files only read (a file that was also changed is listed as modified), sorted."""
        modified = self.written.keys() | self.edited.keys()
        return sorted(path for path in self.read if path not in modified)

    @property
    def modified_files(self) -> list[str]:
        return sorted(self.written.keys() | self.edited.keys())


def _tool_calls(messages: Iterable[Message]) -> list[Mapping[str, Any]]:
    # One comprehension with exact-dict checks (no ABC isinstance): this runs
    # over every summarized message, 100,000 of them in the benchmark.
    return [
        block
        for message in messages
        if message.get("role") == "assistant"
        for block in message.get("content") or ()
        if type(block) is dict and block.get("type") == "tool_call"
    ]


def collect_file_operations(
    messages: Iterable[Message], into: FileOperations | None = None
) -> FileOperations:
    """Paths from ``read``/``write``/``edit`` tool calls in assistant messages
    (added to ``into`` when given)."""
    operations = into if into is not None else FileOperations()
    for call in _tool_calls(messages):
        name = call.get("name")
        if name in _FILE_TOOLS:
            operations.add_call(name, call.get("arguments"))
    return operations


def collect_entry_file_operations(
    entries: Sequence[SessionEntry], stop: int, into: FileOperations
) -> FileOperations:
    """``collect_file_operations`` over the messages of ``entries[:stop]``,
    without building the message list first (the preparation's hot loop).
    The entries were already walked by the native token estimator, which
    refuses malformed messages, so blocks are indexed directly."""
    calls = [
        block
        for entry in entries[:stop]
        if entry["kind"] == "message" and (message := entry["message"])["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "tool_call" and block["name"] in _FILE_TOOLS
    ]
    for call in calls:
        into.add_call(call["name"], call["arguments"])
    return into


def format_file_operations(details: FileOperations | Mapping[str, Any]) -> str:
    """The block appended to a summary: ``<read-files>`` and
    ``<modified-files>`` sections, one path per line, or ``""`` when there are
    none. Takes a ``FileOperations`` or a mapping with ``readFiles`` /
    ``modifiedFiles`` (a compaction entry's data)."""
    if isinstance(details, FileOperations):
        read, modified = details.read_files, details.modified_files
    elif isinstance(details, Mapping):
        read = [p for p in details.get("readFiles") or () if isinstance(p, str)]
        modified = [p for p in details.get("modifiedFiles") or () if isinstance(p, str)]
    else:
        raise TypeError(
            f"format_file_operations needs FileOperations or a mapping, got {type(details).__name__}"
        )
    sections: list[str] = []
    if read:
        sections.append("<read-files>\n" + "\n".join(read) + "\n</read-files>")
    if modified:
        sections.append("<modified-files>\n" + "\n".join(modified) + "\n</modified-files>")
    return "\n\n".join(sections)
