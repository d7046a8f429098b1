"""Types of the Rust core (``prism._native``). Kept honest by mypy.stubtest."""

import os
from collections.abc import Iterable
from typing import Any, Final, Self, TypedDict, TypeVar, final

_T = TypeVar("_T")

# Token estimation -------------------------------------------------------------
MAX_DEPTH: Final[int]
IMAGE_TOKENS: Final[int]
MESSAGE_OVERHEAD_TOKENS: Final[int]

def json_length(value: Any) -> int: ...
def estimate_text_tokens(text: str) -> int: ...
def estimate_value_tokens(value: Any) -> int: ...
def estimate_message_tokens(message: Any) -> int: ...
def estimate_entry_tokens(entry: Any) -> int: ...

# SHA-256 ------------------------------------------------------------------------
def sha256_hex(data: bytes | str) -> str: ...
def digest_value(value: Any) -> tuple[str, int]: ...

# Redaction ------------------------------------------------------------------------
MIN_SECRET_LENGTH: Final[int]

@final
class Redactor:
    def __new__(cls, secrets: Iterable[str], mask: str = "[REDACTED]") -> Self: ...
    @property
    def mask(self) -> str: ...
    def __len__(self) -> int: ...
    def contains(self, text: str) -> bool: ...
    def settled_length(self, text: str) -> int: ...
    def redact_text(self, text: str) -> str: ...
    def redact_value(self, value: _T) -> _T: ...

# JSONL session files ----------------------------------------------------------------
def parse_session_entries(
    data: bytes, *, first_line: int = 1
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]: ...
def read_session_entries(
    path: str | os.PathLike[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]: ...

# Attention pass (rust/prism-native/src/attention; planner in prism-core) ------------
@final
class AttentionMeasureCache:
    def __new__(cls) -> Self: ...
    def stats(self) -> tuple[int, int]: ...
    def clear(self) -> None: ...
    def __len__(self) -> int: ...

# Token calibration fit (rust/prism-native/src/calibration.rs; math in prism-core) --
@final
class CalibrationFit:
    def __new__(cls) -> Self: ...
    def observe(self, prose: int, code: int, tool: int, fixed: int, reported: int) -> bool: ...
    def estimate(self, prose: int, code: int, tool: int, fixed: int) -> int: ...
    @property
    def r(self) -> tuple[float, float, float]: ...
    @r.setter
    def r(self, value: tuple[float, float, float]) -> None: ...
    @property
    def p(self) -> tuple[float, float, float, float, float, float]: ...
    @p.setter
    def p(self, value: tuple[float, float, float, float, float, float]) -> None: ...
    @property
    def turns(self) -> int: ...
    @turns.setter
    def turns(self, value: int) -> None: ...

def attention_plan(
    groups: list[Any],
    mutable: list[bool],
    extras: list[Any],
    cap: int,
    trigger_ratio: float,
    target_ratio: float | None,
    thinking_keep_turns: int,
    keep_last: int,
    exclude_tools: list[str],
    sticky_thinking: Any = None,
    sticky_ids: Any = None,
    redactor: Redactor | None = None,
    cache: AttentionMeasureCache | None = None,
) -> dict[str, Any]: ...
def attention_json_size(value: Any) -> tuple[int, int]: ...
def attention_message_tokens(message: Any) -> int: ...

# --- coding tools: search and listing (prism_core::search) ----------------------

class _SearchHit(TypedDict):
    path: str
    matches: int
    lines: list[tuple[int, str, bool]]

class _SearchResult(TypedDict):
    files: list[_SearchHit]
    files_searched: int
    total_matches: int
    truncated: bool

class _ListResult(TypedDict):
    files: list[tuple[str, float, int]]
    total: int
    truncated: bool

def search_files(
    root: str | os.PathLike[str],
    pattern: str,
    *,
    literal: bool = False,
    ignore_case: bool = False,
    globs: list[str] = ...,
    context: int = 0,
    max_per_file: int = 50,
    max_total: int = 500,
    max_filesize: int = 10485760,
    hidden: bool = False,
    threads: int = 0,
) -> _SearchResult: ...
def list_files(
    root: str | os.PathLike[str],
    globs: list[str] = ...,
    *,
    hidden: bool = False,
    max: int = 1000,
    threads: int = 0,
) -> _ListResult: ...

# JSON-schema `pattern` search in linear time (the `regex` crate)
def pattern_search(pattern: str, text: str) -> bool: ...
