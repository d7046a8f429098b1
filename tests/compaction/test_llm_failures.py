"""Every way an LLM compaction can fail raises and appends nothing; the
session stays usable. Retry follows the session's retry options."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.compaction.llm_support import SECRET, SUMMARY_MODEL, dumped, summary_model

from prism import create_mock_provider
from prism.compaction.llm import LlmCompactionError, create_llm_compaction_strategy
from prism.errors import ConfigError, CredentialError, ProviderError
from prism.providers import provider_done, provider_error, provider_text_delta
from prism.retry import RetryOptions
from prism.runtime import create_agent
from prism.security.credentials import callable_credential, explicit_credential

pytestmark = pytest.mark.anyio

MAIN_MODEL = {"provider": "mock", "model": "main"}


def reply(text: str) -> list[Any]:
    return [provider_text_delta(text), provider_done()]


async def session_with_history(strategy: Any, **agent_options: Any) -> Any:
    """A session with three runs of ~1,000 tokens each, then ready to compact."""
    main = create_mock_provider(lambda request: reply("ok " + "a" * 4000))
    agent = create_agent(model=MAIN_MODEL, provider=main, secrets=[SECRET], **agent_options)
    session = agent.create_session("s1")
    for i in range(3):
        await session.run(f"question {i} {SECRET} " + "q" * 4000)
    return session, strategy


async def assert_nothing_appended(session: Any, compact: Any) -> Exception:
    before = await session.entries()
    with pytest.raises(Exception) as caught:
        await compact()
    assert await session.entries() == before
    assert not session.is_running
    # Still usable: another run and another compaction attempt work.
    await session.run("still there?")
    return caught.value


def failing(*events: Any) -> Any:
    return create_mock_provider([list(events)] * 10, name="summary")


async def test_provider_error_event_raises_with_a_redacted_message() -> None:
    model = failing(provider_error(f"bad request for key {SECRET}", "invalid_request"))
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1500
    )
    session, _ = await session_with_history(strategy)
    error = await assert_nothing_appended(session, lambda: session.compact(strategy=strategy))
    assert isinstance(error, ProviderError) and error.code == "invalid_request"
    assert SECRET not in str(error) and SECRET not in dumped(error.to_error_info())
    assert SECRET not in dumped(model.requests)


async def test_empty_summary_raises() -> None:
    strategy = create_llm_compaction_strategy(
        provider=failing(provider_text_delta("  \n "), provider_done()),
        model=SUMMARY_MODEL,
        keep_recent_tokens=1500,
    )
    session, _ = await session_with_history(strategy)
    error = await assert_nothing_appended(session, lambda: session.compact(strategy=strategy))
    assert isinstance(error, LlmCompactionError) and error.code == "empty_summary"


async def test_a_provider_that_raises_is_a_provider_error() -> None:
    strategy = create_llm_compaction_strategy(
        provider=failing(RuntimeError(f"socket closed ({SECRET})")),
        model=SUMMARY_MODEL,
        keep_recent_tokens=1500,
    )
    session, _ = await session_with_history(strategy)
    error = await assert_nothing_appended(
        session,
        lambda: session.compact(strategy=strategy),  # the agent knows SECRET
    )
    assert isinstance(error, ProviderError) and error.code == "provider_exception"
    assert SECRET not in str(error)


async def test_a_cancelled_call_appends_nothing() -> None:
    started = anyio.Event()

    async def hang(request: Any) -> Any:
        started.set()
        await anyio.Event().wait()  # never set: only cancellation ends it
        return []

    strategy = create_llm_compaction_strategy(
        provider=create_mock_provider(hang), model=SUMMARY_MODEL, keep_recent_tokens=1500
    )
    session, _ = await session_with_history(strategy)
    before = await session.entries()
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: session.compact(strategy=strategy))
        await started.wait()
        group.cancel_scope.cancel()
    assert await session.entries() == before
    assert not session.is_running
    await session.run("after the cancel")


async def test_an_aborted_error_event_is_not_retried() -> None:
    model = failing(provider_error("stopped", "aborted"))
    strategy = create_llm_compaction_strategy(
        provider=model,
        model=SUMMARY_MODEL,
        keep_recent_tokens=1500,
        retry=RetryOptions(base_delay_ms=0),
    )
    session, _ = await session_with_history(strategy)
    error = await assert_nothing_appended(session, lambda: session.compact(strategy=strategy))
    assert isinstance(error, ProviderError) and error.code == "aborted"
    assert model.turns == 1


async def test_credential_failure_raises_before_any_request() -> None:
    built: list[str] = []
    strategy = create_llm_compaction_strategy(
        provider=lambda key: built.append(key) or summary_model("S"),
        model=SUMMARY_MODEL,
        credential=[explicit_credential(None), callable_credential(lambda: None, name="vault")],
        credential_request={"provider": "example", "name": "apiKey"},
        keep_recent_tokens=1500,
    )
    session, _ = await session_with_history(strategy)
    error = await assert_nothing_appended(session, lambda: session.compact(strategy=strategy))
    assert isinstance(error, CredentialError)
    assert "example/apiKey" in str(error) and "vault" in str(error)
    assert built == []


async def test_a_raising_credential_resolver_does_not_leak() -> None:
    def broken() -> str:
        raise RuntimeError(f"vault said {SECRET}")

    strategy = create_llm_compaction_strategy(
        provider=lambda key: summary_model("S"),
        model=SUMMARY_MODEL,
        credential=callable_credential(broken),
        keep_recent_tokens=1500,
    )
    session, _ = await session_with_history(strategy)
    error = await assert_nothing_appended(session, lambda: session.compact(strategy=strategy))
    assert isinstance(error, CredentialError) and SECRET not in str(error)


@pytest.mark.parametrize("factory_result", ["raise", "not a provider"])
async def test_a_broken_provider_factory_raises(factory_result: str) -> None:
    key = "factory-KEY-1234567890"

    def factory(value: str) -> Any:
        if factory_result == "raise":
            raise ValueError(f"rejected {value}")
        return object()

    strategy = create_llm_compaction_strategy(
        provider=factory, model=SUMMARY_MODEL, credential=key, keep_recent_tokens=1500
    )
    session, _ = await session_with_history(strategy)
    error = await assert_nothing_appended(session, lambda: session.compact(strategy=strategy))
    assert isinstance(error, LlmCompactionError) and error.code == "provider_factory_failed"
    assert key not in str(error)


async def test_nothing_to_compact_raises() -> None:
    model = summary_model("S")
    strategy = create_llm_compaction_strategy(provider=model, model=SUMMARY_MODEL)
    agent = create_agent(model=MAIN_MODEL, provider=create_mock_provider(lambda r: reply("hi")))
    session = agent.create_session("s1")
    await session.run("the only turn")
    error = await assert_nothing_appended(session, lambda: session.compact(strategy=strategy))
    assert isinstance(error, LlmCompactionError) and error.code == "nothing_to_compact"
    assert model.turns == 0


async def test_a_branch_inside_the_budget_keeps_only_its_newest_turn() -> None:
    model = summary_model("S")
    strategy = create_llm_compaction_strategy(provider=model, model=SUMMARY_MODEL)
    session, _ = await session_with_history(strategy)  # three turns, far under 20,000 tokens
    entry = await session.compact(strategy=strategy)
    messages = await session.messages()
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"][0]["text"].startswith("question 2")
    assert model.turns == 1 and entry["data"]["keepEntryIds"] == entry["data"]["keepEntryIds"][:2]


async def test_a_policy_returning_garbage_raises() -> None:
    strategy = create_llm_compaction_strategy(
        provider=summary_model("S"),
        model=SUMMARY_MODEL,
        keep_recent_tokens=1500,
        provider_request_policies=[lambda request: "nope"],
    )
    session, _ = await session_with_history(strategy)
    error = await assert_nothing_appended(session, lambda: session.compact(strategy=strategy))
    assert isinstance(error, ConfigError) and "policies[0]" in str(error)


def flaky(*failures: Any) -> Any:
    """Fails with each given error event once, then answers."""
    return create_mock_provider(
        [[failure] for failure in failures] + [reply("## Goal\nrecovered")], name="summary"
    )


async def test_transient_failures_retry_with_the_sessions_retry_options() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    model = flaky(provider_error("busy", "503"), provider_error("slow down", "rate_limit"))
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1500
    )
    session, _ = await session_with_history(
        strategy,
        retry=RetryOptions(max_attempts=3, base_delay_ms=40, jitter=False),
        sleep=fake_sleep,
    )
    entry = await session.compact(strategy=strategy)
    assert entry["summary"].startswith("## Goal\nrecovered")
    assert model.turns == 3
    assert slept == [0.04, 0.08]  # the session's backoff, through the session's sleep


async def test_retry_gives_up_after_max_attempts() -> None:
    model = flaky(*[provider_error("busy", "503")] * 5)
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1500
    )
    session, _ = await session_with_history(
        strategy, retry=RetryOptions(max_attempts=2, base_delay_ms=0)
    )
    error = await assert_nothing_appended(session, lambda: session.compact(strategy=strategy))
    assert isinstance(error, ProviderError) and model.turns == 2


async def test_non_transient_errors_and_retry_false_do_not_retry() -> None:
    model = flaky(provider_error("bad", "invalid_request"))
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1500
    )
    session, _ = await session_with_history(strategy, retry=RetryOptions(base_delay_ms=0))
    await assert_nothing_appended(session, lambda: session.compact(strategy=strategy))
    assert model.turns == 1

    model = flaky(provider_error("busy", "503"))
    off = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1500, retry=False
    )
    session, _ = await session_with_history(off, retry=RetryOptions(base_delay_ms=0))
    await assert_nothing_appended(session, lambda: session.compact(strategy=off))
    assert model.turns == 1


async def test_without_session_retry_the_strategy_option_applies() -> None:
    model = flaky(provider_error("busy", "503"))
    strategy = create_llm_compaction_strategy(
        provider=model, model=SUMMARY_MODEL, keep_recent_tokens=1500, retry={"baseDelayMs": 0}
    )
    session, _ = await session_with_history(strategy)
    await session.compact(strategy=strategy)
    assert model.turns == 2
