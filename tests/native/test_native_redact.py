from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tests.native.native_strategies import json_values, texts
from tests.oracles import redact as oracle

from prism import _native as native

secret_text = st.text(min_size=4, max_size=12).filter(lambda s: len(s) >= 4)
secret_sets = st.lists(secret_text, min_size=1, max_size=6)


@st.composite
def text_with_secrets(draw: st.DrawFn) -> tuple[list[str], str]:
    secrets = draw(secret_sets)
    parts = draw(st.lists(st.one_of(st.text(max_size=8), st.sampled_from(secrets)), max_size=10))
    return secrets, "".join(parts)


@settings(max_examples=200, deadline=None)
@given(text_with_secrets())
def test_redact_text_matches_oracle(case: tuple[list[str], str]) -> None:
    secrets, text = case
    r, o = native.Redactor(secrets), oracle.Redactor(secrets)
    assert r.redact_text(text) == o.redact_text(text)
    assert r.contains(text) == o.contains(text)
    assert len(r) == len(o)


@settings(max_examples=200, deadline=None)
@given(secret_sets, json_values)
def test_redact_value_matches_oracle(secrets: list[str], value: Any) -> None:
    r, o = native.Redactor(secrets, mask="<m>"), oracle.Redactor(secrets, mask="<m>")
    got = r.redact_value(value)
    assert got == o.redact_value(value)
    if not any(r.contains(s) for s in _strings(value)):
        assert got is value


@settings(max_examples=100, deadline=None)
@given(secret_sets, st.dictionaries(texts, json_values, min_size=1, max_size=4))
def test_redact_value_copies_only_changed_paths(secrets: list[str], value: Any) -> None:
    r = native.Redactor(secrets)
    assume(not any(r.contains(word) for word in ("clean", "untouched", "dirty")))
    wrapped = {"clean": ["untouched"], "dirty": [value, secrets[0]]}
    out = r.redact_value(wrapped)
    assert out is not wrapped
    assert out["clean"] is wrapped["clean"]
    assert "[REDACTED]" in out["dirty"][1]
    assert out["dirty"][1] == r.redact_text(secrets[0])


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def test_prefix_secret_leaves_no_tail() -> None:
    r = native.Redactor(["sk-live", "sk-live-123456"])
    assert r.redact_text("a sk-live-123456 b sk-live c") == "a [REDACTED] b [REDACTED] c"


def test_keys_values_tuples_and_identity() -> None:
    r = native.Redactor(["hunter22"], mask="***")
    value = {"hunter22": ("x hunter22", 3, None), "ok": {"deep": ["fine"]}}
    out = r.redact_value(value)
    assert out == {"***": ("x ***", 3, None), "ok": {"deep": ["fine"]}}
    assert out["ok"] is value["ok"]
    assert list(out) == ["***", "ok"]  # order kept
    text = "no secret here"
    assert r.redact_text(text) is text
    assert value == {"hunter22": ("x hunter22", 3, None), "ok": {"deep": ["fine"]}}  # not mutated


def test_non_ascii_and_surrogates() -> None:
    r = native.Redactor(["pässwörd"])
    assert r.redact_text("→pässwörd←") == "→[REDACTED]←"
    assert r.redact_text("\ud800pässwörd") == "\ud800[REDACTED]"
    assert r.contains("\udfffpässwörd")


def test_large_text() -> None:
    secrets = [f"secret-{i:04d}-xyz" for i in range(50)]
    text = ("filler " * 20_000 + secrets[7]) * 3
    r = native.Redactor(secrets)
    assert r.redact_text(text) == text.replace(secrets[7], "[REDACTED]")


def test_mask_len_and_repr_never_leak() -> None:
    r = native.Redactor(["abcd", "abcd", "efgh"], mask="#")
    assert r.mask == "#"
    assert len(r) == 2
    assert "abcd" not in repr(r)
    assert len(native.Redactor([])) == 0
    assert native.Redactor([]).redact_text("abcd") == "abcd"


@pytest.mark.parametrize(
    ("secrets", "exc", "message"),
    [
        (["okay", ""], ValueError, "secret #1 is empty"),
        (["abc"], ValueError, "secret #0 is shorter than MIN_SECRET_LENGTH (4 characters)"),
        ("abcdef", TypeError, "secrets must be an iterable of str, not a single str"),
        (["abcd", 5], TypeError, "secret #1 must be a str, not int"),
        (["\ud800abc"], ValueError, "secret #0 is not valid UTF-8"),
        (5, TypeError, "not iterable"),
    ],
)
def test_bad_secrets(secrets: Any, exc: type[Exception], message: str) -> None:
    with pytest.raises(exc) as caught:
        native.Redactor(secrets)
    assert message in str(caught.value)
    assert native.MIN_SECRET_LENGTH == oracle.MIN_SECRET_LENGTH


def test_cycles_raise() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="MAX_DEPTH"):
        native.Redactor(["abcd"]).redact_value(cyclic)
