"""SHA-256 of a 1 MB tool result: `digest_value` streams the compact JSON into
the hasher; the baseline builds it with json.dumps and hashes with hashlib."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from benches.fixtures.session import _code  # the generator's source-code text

from prism import _native as native

RESULT: dict[str, Any] = {
    "type": "tool_result",
    "toolCallId": "call_1",
    "name": "run_command",
    "result": {"exitCode": 0, "stdout": _code(__import__("random").Random(1), 1 << 20)},
}


def hashlib_json(value: Any) -> tuple[str, int]:
    data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    return hashlib.sha256(data).hexdigest(), len(data)


def test_same_digest() -> None:
    assert native.digest_value(RESULT) == hashlib_json(RESULT)


@pytest.mark.benchmark(group="digest-1MB")
def test_digest_native(benchmark: Any) -> None:
    benchmark(native.digest_value, RESULT)


@pytest.mark.benchmark(group="digest-1MB")
def test_digest_hashlib_json_dumps(benchmark: Any) -> None:
    benchmark(hashlib_json, RESULT)
