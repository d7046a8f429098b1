"""One option-coercion rule (prism._options) behind retry, compaction, LLM
compaction and attention compiler options, and the ``create_agent``/``run``
parameters that take them."""

from __future__ import annotations

from typing import Any

import pytest

from prism.attention import AttentionCompilerOptions
from prism.compaction import CompactionOptions, coerce_compaction_options
from prism.compaction.llm.options import LlmCompactionOptions
from prism.errors import AttentionConfigError, ConfigError
from prism.providers import create_mock_provider, provider_done
from prism.retry import RetryOptions
from prism.runtime.options import coerce_retry_options

# (class, what its errors call it, a field, its camelCase key, a value)
CLASSES = [
    (RetryOptions, "retry", "max_attempts", "maxAttempts", 5),
    (CompactionOptions, "compaction", "keep_recent_entries", "keepRecentEntries", 3),
    (LlmCompactionOptions, "llm compaction", "reserve_tokens", "reserveTokens", 900),
    (AttentionCompilerOptions, "attention compiler", "keep_last", "keepLast", 2),
]
IDS = [row[0].__name__ for row in CLASSES]
PROVIDER = create_mock_provider([provider_done()])
MODEL = {"provider": "mock", "model": "summary"}


def read(cls: Any, data: Any) -> Any:
    # LLM compaction also needs what JSON cannot hold: its provider.
    if cls is LlmCompactionOptions:
        return cls.from_json({"model": MODEL, **data}, provider=PROVIDER)
    return cls.from_json(data)


@pytest.mark.parametrize(("cls", "what", "name", "key", "value"), CLASSES, ids=IDS)
def test_camel_case_and_snake_case_keys_read_the_same(
    cls: Any, what: str, name: str, key: str, value: int
) -> None:
    assert getattr(read(cls, {key: value}), name) == value
    assert read(cls, {key: value}) == read(cls, {name: value})


@pytest.mark.parametrize(("cls", "what", "name", "key", "value"), CLASSES, ids=IDS)
def test_an_unknown_key_is_named_with_the_expected_ones(
    cls: Any, what: str, name: str, key: str, value: int
) -> None:
    typo = key[:-1]
    with pytest.raises(ConfigError) as raised:
        cls.from_json({key: value, typo: value})
    message = str(raised.value)
    assert message.startswith(f"unknown {what} option {typo!r}; expected one of [")
    assert repr(key) in message


@pytest.mark.parametrize(("cls", "what", "name", "key", "value"), CLASSES, ids=IDS)
def test_a_field_under_both_spellings_is_refused(
    cls: Any, what: str, name: str, key: str, value: int
) -> None:
    with pytest.raises(ConfigError, match=f"{what} option '{name}' given twice"):
        cls.from_json({key: value, name: value})


@pytest.mark.parametrize(("cls", "what", "name", "key", "value"), CLASSES, ids=IDS)
def test_a_non_mapping_is_refused_with_its_type(
    cls: Any, what: str, name: str, key: str, value: int
) -> None:
    with pytest.raises(ConfigError, match=f"{what} options must be an object, got list"):
        cls.from_json([key, value])


def test_attention_keeps_its_own_error_class() -> None:
    with pytest.raises(AttentionConfigError):
        AttentionCompilerOptions.from_json({"keepLats": 1})


@pytest.mark.parametrize(
    ("coerce", "cls", "what"),
    [
        (coerce_retry_options, RetryOptions, "retry"),
        (coerce_compaction_options, CompactionOptions, "compaction"),
    ],
    ids=["retry", "compaction"],
)
def test_retry_and_compaction_parameters_coerce_alike(coerce: Any, cls: Any, what: str) -> None:
    assert coerce(None) is None and coerce(False) is None
    assert coerce(True) == cls()
    given = cls()
    assert coerce(given) is given
    assert coerce({}) == cls()
    for wrong in ("yes", 3, ["maxAttempts"]):
        with pytest.raises(ConfigError) as raised:
            coerce(wrong)
        assert str(raised.value) == (
            f"{what} must be {cls.__name__}, a mapping, True, False or None,"
            f" got {type(wrong).__name__}"
        )


def test_llm_compaction_retry_follows_the_rule_plus_a_policy() -> None:
    class Never:
        def decide(self, context: object) -> object:
            return None

    policy = Never()

    def llm(retry: Any) -> Any:
        return LlmCompactionOptions(provider=PROVIDER, model=MODEL, retry=retry).retry

    assert llm(None) is None  # the session's retry
    assert llm(False) is False  # never retry
    assert llm({"max_attempts": 2}) == RetryOptions(max_attempts=2)
    assert llm(policy) == RetryOptions(policy=policy)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="llm compaction option retry must be RetryOptions"):
        llm("often")
