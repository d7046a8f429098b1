"""Reference SHA-256 helpers: build the compact JSON, then hash it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.oracles.tokens import json_length


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()


def compact_json(value: Any) -> str:
    json_length(value)  # same validation (str keys, depth, NaN) and errors
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def digest_value(value: Any) -> tuple[str, int]:
    data = compact_json(value).encode()
    return hashlib.sha256(data).hexdigest(), len(data)
