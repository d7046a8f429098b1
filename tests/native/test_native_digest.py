from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.native.native_strategies import json_values, nest
from tests.oracles import digest as oracle

from prism import _native as native


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_digest_value_matches_hashlib_over_json_dumps(value: Any) -> None:
    data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    want = (hashlib.sha256(data).hexdigest(), len(data))
    assert native.digest_value(value) == want == oracle.digest_value(value)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(), st.text()))
def test_sha256_hex(data: bytes | str) -> None:
    assert native.sha256_hex(data) == oracle.sha256_hex(data)


def test_large_inputs_hash_with_the_gil_released() -> None:
    big = 'a"b\n' * 400_000  # > 1 MiB, goes through the detached path
    value = {"result": big, "n": [1, 2.5]}
    assert native.digest_value(value) == oracle.digest_value(value)
    raw = bytes(range(256)) * 10_000
    assert native.sha256_hex(raw) == hashlib.sha256(raw).hexdigest()


def test_byte_length_counts_utf8_bytes() -> None:
    _, n = native.digest_value("é𝄞")
    assert n == len('"é𝄞"'.encode())


@pytest.mark.parametrize(
    ("value", "exc", "message"),
    [
        ({"a": b"x"}, TypeError, "Object of type bytes is not JSON serializable at $.a"),
        ([float("inf")], ValueError, "not JSON compliant: inf at $[0]"),
        ({"k": {None: 1}}, TypeError, "keys must be str, not NoneType at $.k"),
        (nest(0, 101), ValueError, "MAX_DEPTH"),
        ({"s": "\ud800"}, ValueError, "lone surrogate has no UTF-8 encoding at $.s"),
    ],
)
def test_bad_values(value: Any, exc: type[Exception], message: str) -> None:
    with pytest.raises(exc) as caught:
        native.digest_value(value)
    assert message in str(caught.value)


def test_sha256_hex_rejects_other_types() -> None:
    with pytest.raises(TypeError, match="needs bytes or str, not int"):
        native.sha256_hex(3)  # type: ignore[arg-type]
    with pytest.raises(UnicodeEncodeError):
        native.sha256_hex("\ud800")


def test_paths_survive_a_gil_release_inside_the_walk() -> None:
    big = "b\n" * (1 << 20)  # 2 MiB: hashed with the GIL released
    value = {"k": [big, {"x": big}]}
    assert native.digest_value(value) == oracle.digest_value(value)
    with pytest.raises(TypeError, match=r"at \$\.k\[2\]\.z$"):
        native.digest_value({"k": [big, 1, {"z": b""}]})
    with pytest.raises(TypeError) as caught:
        native.digest_value({big: [b""]})
    assert str(caught.value).endswith('at $["' + "b\\n" * 32 + '"][0]')
