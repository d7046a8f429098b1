"""Test-only stand-ins for native functions that have not landed yet.

``install()`` adds a pure-Python ``parse_session_entries`` (and the few other
functions the stores/compaction tests touch) to ``prism._native`` only when
the native module lacks them, so the product code under test always calls
``prism._native`` and switches to the real implementation automatically.
"""

from __future__ import annotations

import json
import math
from typing import Any

_KINDS = {"message", "summary", "model_change", "custom", "compaction", "label"}


def _shape_error(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "entry is not a JSON object"
    for key in ("id", "sessionId"):
        if not isinstance(value.get(key), str):
            return f"field '{key}' must be a string"
    if "parentId" not in value or not (
        value["parentId"] is None or isinstance(value["parentId"], str)
    ):
        return "field 'parentId' must be a string or null"
    kind = value.get("kind")
    if kind not in _KINDS:
        return "field 'kind' is not a known entry kind"
    if kind == "message":
        msg = value.get("message")
        if (
            not isinstance(msg, dict)
            or not isinstance(msg.get("role"), str)
            or not isinstance(msg.get("content"), list)
        ):
            return "field 'message' must be a message object"
    elif kind == "summary":
        if not isinstance(value.get("summary"), str):
            return "field 'summary' must be a string"
    elif kind == "model_change":
        model = value.get("model")
        if (
            not isinstance(model, dict)
            or not isinstance(model.get("provider"), str)
            or not isinstance(model.get("model"), str)
        ):
            return "field 'model' must be a model config"
    elif kind == "custom":
        if not isinstance(value.get("customType"), str):
            return "field 'customType' must be a string"
    elif kind == "compaction":
        if not isinstance(value.get("summary"), str):
            return "field 'summary' must be a string"
        if not isinstance(value.get("data"), dict):
            return "field 'data' must be an object"
    elif kind == "label":
        if not isinstance(value.get("label"), str):
            return "field 'label' must be a string"
    return None


def parse_session_entries(data: bytes, *, first_line: int = 1) -> tuple[list[Any], list[Any]]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()
    entries: list[Any] = []
    errors: list[Any] = []
    for index, piece in enumerate(pieces):
        line = first_line + index
        if piece.endswith(b"\r"):
            piece = piece[:-1]
        raw = piece.decode("utf-8", "replace")
        if not piece.strip():
            continue
        try:
            text = piece.decode("utf-8")
        except UnicodeDecodeError:
            errors.append({"line": line, "reason": "invalid UTF-8", "raw": raw})
            continue
        try:
            value = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except (ValueError, RecursionError):
            errors.append({"line": line, "reason": "invalid JSON", "raw": raw})
            continue
        reason = _shape_error(value)
        if reason is not None:
            errors.append({"line": line, "reason": reason, "raw": raw})
            continue
        entries.append(value)
    return entries, errors


def read_session_entries(path: Any) -> tuple[list[Any], list[Any]]:
    try:
        with open(path, "rb") as fh:
            return parse_session_entries(fh.read())
    except FileNotFoundError:
        return [], []


class Redactor:
    def __init__(self, secrets: Any, mask: str = "[REDACTED]") -> None:
        self._secrets = sorted({s for s in secrets}, key=len, reverse=True)
        for s in self._secrets:
            if len(s) < 4:
                raise ValueError("secret shorter than MIN_SECRET_LENGTH")
        self._mask = mask

    @property
    def mask(self) -> str:
        return self._mask

    def __len__(self) -> int:
        return len(self._secrets)

    def contains(self, text: str) -> bool:
        return any(s in text for s in self._secrets)

    def redact_text(self, text: str) -> str:
        for s in self._secrets:
            text = text.replace(s, self._mask)
        return text

    def redact_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, list):
            return [self.redact_value(v) for v in value]
        if isinstance(value, dict):
            return {self.redact_text(k): self.redact_value(v) for k, v in value.items()}
        return value


def estimate_value_tokens(value: Any) -> int:
    return math.ceil(len(json.dumps(value, separators=(",", ":"), ensure_ascii=False)) / 4)


def estimate_entry_tokens(entry: Any) -> int:
    return estimate_value_tokens(entry)


def estimate_text_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def install() -> None:
    from prism import _native

    for name, fn in {
        "parse_session_entries": parse_session_entries,
        "read_session_entries": read_session_entries,
        "Redactor": Redactor,
        "estimate_value_tokens": estimate_value_tokens,
        "estimate_entry_tokens": estimate_entry_tokens,
        "estimate_text_tokens": estimate_text_tokens,
        "MIN_SECRET_LENGTH": 4,
    }.items():
        if not hasattr(_native, name):
            setattr(_native, name, fn)
