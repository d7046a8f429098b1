from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from prism.contracts import ErrorInfo
from prism.errors import ConfigError
from prism.retry import (
    RetryContext,
    RetryDecision,
    RetryOptions,
    clamp_middleware_decision,
    create_default_retry_policy,
    decide_retry,
    is_transient_error_info,
    wait_for_retry,
)
from prism.security import NOOP_REDACTOR, create_redactor, redact_error_info


@pytest.mark.parametrize(
    ("info", "transient"),
    [
        ({"message": "x", "code": "ETIMEDOUT"}, True),
        ({"message": "x", "code": "econnreset"}, True),
        ({"message": "x", "code": "429"}, True),
        ({"message": "x", "code": "500"}, True),
        ({"message": "x", "code": "502"}, True),
        ({"message": "x", "code": "503"}, True),
        ({"message": "x", "code": "504"}, True),
        ({"message": "x", "code": "timeout"}, True),
        ({"message": "x", "code": "rate_limit"}, True),
        ({"message": "x", "code": "temporarily_unavailable"}, True),
        ({"message": "x", "status": 429}, True),
        ({"message": "x", "status": 503}, True),
        ({"message": "x", "status": 400}, False),
        ({"message": "x", "status": 401}, False),
        ({"message": "Request timeout after 30s"}, True),
        ({"message": "connect ETIMEDOUT 10.0.0.1:443"}, True),
        ({"message": "read ECONNRESET"}, True),
        ({"message": "HTTP 502 Bad Gateway"}, True),
        ({"message": "rate_limit_exceeded"}, True),
        ({"message": "Rate limit reached"}, True),
        ({"message": "service temporarily unavailable"}, True),
        ({"message": "prompt used 5000 tokens"}, False),
        ({"message": "error code 4290"}, False),
        ({"message": "invalid api key"}, False),
        ({"message": "x", "code": "invalid_request"}, False),
        ({"message": "timeout", "code": "aborted"}, False),
        ({"message": "x", "code": "cancelled", "status": 503}, False),
        ({"message": "x", "code": "503", "retryable": False}, False),
        ({"message": "bad request", "retryable": True}, True),
        ({}, False),
    ],
)
def test_classification_table(info: Any, transient: bool) -> None:
    assert is_transient_error_info(info) is transient


def test_classification_of_non_mappings() -> None:
    assert is_transient_error_info(None) is False
    assert is_transient_error_info("timeout") is False  # type: ignore[arg-type]


def ctx(attempt: int, info: ErrorInfo, **kwargs: Any) -> RetryContext:
    return RetryContext(attempt=attempt, error=info, **kwargs)


TRANSIENT: ErrorInfo = {"message": "overloaded", "code": "503"}


def test_exponential_backoff_capped() -> None:
    policy = create_default_retry_policy(
        max_attempts=10, base_delay_ms=100, max_delay_ms=1000, jitter=False
    )
    delays = [policy.decide(ctx(n, TRANSIENT)).delay_ms for n in range(1, 10)]
    assert delays == [100, 200, 400, 800, 1000, 1000, 1000, 1000, 1000]
    assert policy.backoff_ms(10_000) == 1000


def test_jitter_is_on_by_default_and_keeps_three_quarters_of_the_backoff() -> None:
    assert RetryOptions().jitter is True
    policy = create_default_retry_policy(max_attempts=60, base_delay_ms=100, max_delay_ms=1000)
    assert policy.jitter is True
    delays = [policy.decide(ctx(n % 5 + 1, TRANSIENT)).delay_ms for n in range(50)]
    caps = [min(100 * 2 ** (n % 5), 1000) for n in range(50)]
    # The official OpenAI client's rule: each wait is 75-100 % of its backoff.
    assert all(cap * 3 / 4 <= d <= cap for d, cap in zip(delays, caps, strict=True))
    assert delays != caps  # drawn, not the plain schedule (50 draws cannot all hit the cap)
    seeded = RetryOptions(seed=5).resolve_policy()
    again = RetryOptions(seed=5).resolve_policy()
    assert [seeded.decide(ctx(2, TRANSIENT)) for _ in range(5)] == [
        again.decide(ctx(2, TRANSIENT))
        for _ in range(5)  # type: ignore[union-attr]
    ]


def test_jittered_waits_always_grow_until_the_cap() -> None:
    # Full jitter ([0, backoff]) drew a second wait no longer than the first
    # for some seeds, which a server (and llmock) reads as no backoff.
    for seed in range(300):
        policy = create_default_retry_policy(
            max_attempts=10, base_delay_ms=100, max_delay_ms=60_000, seed=seed
        )
        delays = [policy.decide(ctx(n, TRANSIENT)).delay_ms for n in range(1, 10)]
        assert all(a < b for a, b in itertools.pairwise(delays)), (seed, delays)


def test_max_attempts_counts_total_attempts() -> None:
    policy = create_default_retry_policy(max_attempts=3)
    assert policy.decide(ctx(1, TRANSIENT)).retry
    assert policy.decide(ctx(2, TRANSIENT)).retry
    assert policy.decide(ctx(3, TRANSIENT)) == RetryDecision(False, 0, "max_attempts")
    assert create_default_retry_policy(max_attempts=1).decide(ctx(1, TRANSIENT)).retry is False


def test_never_after_output_abort_or_non_transient() -> None:
    policy = create_default_retry_policy()
    assert policy.decide(ctx(1, TRANSIENT, output_started=True)).reason == "output_started"
    assert policy.decide(ctx(1, {"message": "x", "code": "aborted"})).reason == "aborted"
    assert policy.decide(ctx(1, {"message": "bad key", "code": "auth"})).reason == "not_transient"


def test_retry_after_raises_delay_or_gives_up_past_the_cap() -> None:
    policy = create_default_retry_policy(
        max_attempts=5, base_delay_ms=100, max_delay_ms=1000, jitter=False
    )
    assert policy.decide(ctx(1, {**TRANSIENT, "retryAfterMs": 750})).delay_ms == 750
    assert policy.decide(ctx(3, {**TRANSIENT, "retryAfterMs": 50})).delay_ms == 400
    assert policy.decide(ctx(1, {**TRANSIENT, "retryAfterMs": 1000})).delay_ms == 1000
    too_long = policy.decide(ctx(1, {**TRANSIENT, "retryAfterMs": 30_000}))
    assert too_long == RetryDecision(False, 0, "retry_after_exceeds_max_delay")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_attempts": 0}, "max_attempts must be an int >= 1"),
        ({"base_delay_ms": -1}, "base_delay_ms must be an int >= 0"),
        ({"max_delay_ms": 1.5}, "max_delay_ms must be an int >= 0"),
        ({"max_attempts": True}, "max_attempts"),
    ],
)
def test_policy_rejects_bad_numbers(kwargs: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_default_retry_policy(**kwargs)
    with pytest.raises(ConfigError, match=message):
        RetryOptions(**kwargs)


def test_decision_rejects_negative_delay() -> None:
    with pytest.raises(ConfigError, match="delay_ms"):
        RetryDecision(True, -1)


def test_options_from_json_and_policy_resolution() -> None:
    options = RetryOptions.from_json(
        {
            "maxAttempts": 5,
            "baseDelayMs": 10,
            "maxDelayMs": 40,
            "jitter": False,
        }
    )
    assert (options.max_attempts, options.base_delay_ms, options.max_delay_ms) == (5, 10, 40)
    policy = options.resolve_policy()
    assert policy.decide(ctx(4, TRANSIENT)) == RetryDecision(True, 40, "transient")

    class Never:
        def decide(self, context: RetryContext) -> RetryDecision:
            return RetryDecision(False, 0, "never")

    custom = Never()
    assert RetryOptions(policy=custom).resolve_policy() is custom


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"maxAttempt": 3}, r"unknown retry option 'maxAttempt'; expected one of \["),
        # ``policy`` is the Python name of an object JSON cannot carry: it must be one.
        ({"policy": "default"}, "retry policy must have a decide"),
        ({"maxAttempts": 2, "max_attempts": 3}, "retry option 'max_attempts' given twice"),
        ({"secrets": ["s3cret-value"]}, r"'secrets': .*on the agent \(create_agent"),
        ({"maxAttempts": "3"}, "max_attempts must be an int"),
        ({"metadata": []}, "metadata must be a mapping"),
        ([], "retry options must be an object"),
    ],
)
def test_options_from_json_rejects_bad_input(data: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RetryOptions.from_json(data)


def test_options_reject_objects_without_decide() -> None:
    with pytest.raises(ConfigError, match="decide"):
        RetryOptions(policy=object())  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_decide_retry_handles_async_and_fails_closed() -> None:
    class AsyncPolicy:
        async def decide(self, context: RetryContext) -> RetryDecision:
            return RetryDecision(True, 5, "async")

    class Broken:
        def decide(self, context: RetryContext) -> RetryDecision:
            raise RuntimeError("policy bug")

    class Garbage:
        def decide(self, context: RetryContext) -> Any:
            return True

    assert await decide_retry(AsyncPolicy(), ctx(1, TRANSIENT)) == RetryDecision(True, 5, "async")
    broken = await decide_retry(Broken(), ctx(1, TRANSIENT))
    assert broken.retry is False and broken.reason == "policy_failed:RuntimeError"
    assert (await decide_retry(Garbage(), ctx(1, TRANSIENT))).retry is False


def test_middleware_may_stop_or_shorten_but_not_extend_or_start() -> None:
    original = RetryDecision(True, 400, "transient")
    assert clamp_middleware_decision(original, {"decision": RetryDecision(True, 100, "m")}) == (
        RetryDecision(True, 100, "m")
    )
    assert (
        clamp_middleware_decision(original, {"decision": RetryDecision(True, 9_999)}).delay_ms
        == 400
    )
    assert clamp_middleware_decision(original, {"decision": RetryDecision(False)}).retry is False
    refused = RetryDecision(False, 0, "not_transient")
    assert clamp_middleware_decision(refused, {"decision": RetryDecision(True, 1)}).retry is False
    assert clamp_middleware_decision(original, {"decision": "yes"}) == original
    assert clamp_middleware_decision(original, None) == original
    assert clamp_middleware_decision(original, RetryDecision(True, 10)).delay_ms == 10


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()


@pytest.mark.anyio
async def test_wait_for_retry_with_fake_clock() -> None:
    clock = FakeClock()
    policy = create_default_retry_policy(
        max_attempts=4, base_delay_ms=100, max_delay_ms=1000, jitter=False
    )
    for attempt in (1, 2, 3, 4):
        await wait_for_retry(policy.decide(ctx(attempt, TRANSIENT)), sleep=clock.sleep)
    assert clock.sleeps == [0.1, 0.2, 0.4]  # the 4th attempt is refused, so no wait
    assert clock.now == pytest.approx(0.7)


@pytest.mark.anyio
async def test_wait_for_retry_is_cancellable() -> None:
    finished: list[bool] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        await wait_for_retry(RetryDecision(True, 3_600_000))
        finished.append(True)
    assert scope.cancelled_caught and finished == []


def test_redact_error_info_masks_message_and_details() -> None:
    secret = "sk-retry-0123456789"
    info: ErrorInfo = {
        "message": f"bad key {secret}",
        "code": "401",
        "details": {"header": f"Bearer {secret}"},
    }
    redacted = redact_error_info(info, create_redactor([secret]))
    assert secret not in repr(redacted)
    assert info["message"] == f"bad key {secret}"  # the original is untouched
    assert redact_error_info(info, NOOP_REDACTOR) == info
    # One redaction path: a bare list (rebuilt per call) or None is refused.
    with pytest.raises(TypeError, match="create_redactor"):
        redact_error_info(info, [secret])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="NOOP_REDACTOR"):
        redact_error_info(info, None)  # type: ignore[arg-type]


def test_retry_options_keep_no_secrets_of_their_own() -> None:
    # One redactor: the agent's masks retry errors (see the runtime test).
    assert not hasattr(RetryOptions(), "secrets")
    with pytest.raises(TypeError, match="secrets"):
        RetryOptions(secrets=("s3cret-value",))  # type: ignore[call-arg]


@pytest.mark.anyio
async def test_the_agents_redactor_masks_what_a_retry_policy_sees() -> None:
    from prism.providers import (
        create_mock_provider,
        provider_done,
        provider_error,
        provider_text_delta,
    )
    from prism.runtime import create_agent

    secret = "agent-secret-1234"
    seen: list[str] = []

    class Recording:
        def decide(self, context: RetryContext) -> RetryDecision:
            seen.append(context.error["message"])
            return RetryDecision(True, 0, "transient")

    provider = create_mock_provider(
        [
            [provider_error(f"upstream said {secret}", "503")],
            [provider_text_delta("ok"), provider_done()],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=provider,
        retry=RetryOptions(policy=Recording()),
        secrets=[secret],
    )
    result = await agent.create_session().run("hi")
    assert result.text == "ok"
    assert seen == ["upstream said [REDACTED]"]
