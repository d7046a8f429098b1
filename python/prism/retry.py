"""Provider-turn retry: classification, the default backoff policy, and waiting.

Retry wraps one provider request after input assembly. A turn is retried only
while it has produced no output (no message start/delta, no tool call), only
for transient failures, and never after an abort. The runtime owns the loop,
the ``retry_scheduled`` event and the ``retry`` middleware call; this module
owns the decisions.
"""

from __future__ import annotations

import inspect
import random
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

import anyio

from prism._json_fields import NOT_JSON
from prism._options import options_from_mapping
from prism.contracts import ErrorInfo
from prism.errors import ConfigError

TRANSIENT_CODES: Final[frozenset[str]] = frozenset(
    {
        "etimedout",
        "econnreset",
        "econnrefused",
        "429",
        "500",
        "502",
        "503",
        "504",
        "timeout",
        "rate_limit",
        "temporarily_unavailable",
    }
)
TRANSIENT_STATUSES: Final[frozenset[int]] = frozenset({429, 500, 502, 503, 504})
ABORT_CODES: Final[frozenset[str]] = frozenset({"aborted", "abort", "cancelled", "canceled"})
# Word-ish boundaries so "5000 tokens" is not a 500 and "rate_limit_exceeded" still is.
_TRANSIENT_MESSAGE = re.compile(
    r"(?<![a-z0-9])(etimedout|econnreset|econnrefused|429|500|502|503|504|timeout|timed out"
    r"|rate_limit|rate limit|temporarily_unavailable|temporarily unavailable)(?![a-z0-9])",
    re.IGNORECASE,
)

# Decision reasons (stable strings; they carry no error text).
REASON_TRANSIENT: Final = "transient"
REASON_ABORTED: Final = "aborted"
REASON_OUTPUT_STARTED: Final = "output_started"
REASON_NOT_TRANSIENT: Final = "not_transient"
REASON_MAX_ATTEMPTS: Final = "max_attempts"
REASON_RETRY_AFTER_TOO_LONG: Final = "retry_after_exceeds_max_delay"


def is_abort_error_info(info: Mapping[str, Any]) -> bool:
    code = info.get("code")
    return isinstance(code, str) and code.lower() in ABORT_CODES


def is_transient_error_info(info: Mapping[str, Any] | None) -> bool:
    """Transient by ``retryable`` flag, code, HTTP status or message text.

    An explicit ``retryable`` flag wins; aborts are never transient.
    """
    if not isinstance(info, Mapping):
        return False
    if is_abort_error_info(info):
        return False
    retryable = info.get("retryable")
    if isinstance(retryable, bool):
        return retryable
    code = info.get("code")
    if isinstance(code, str | int) and not isinstance(code, bool):
        if str(code).lower() in TRANSIENT_CODES:
            return True
    status = info.get("status")
    if isinstance(status, int) and status in TRANSIENT_STATUSES:
        return True
    message = info.get("message")
    return isinstance(message, str) and _TRANSIENT_MESSAGE.search(message) is not None


@dataclass(frozen=True, slots=True)
class RetryContext:
    """What a policy sees about one failed attempt (``attempt`` is 1-based).

    It deliberately carries no request messages, provider objects or credentials.
    """

    attempt: int
    error: ErrorInfo
    output_started: bool = False
    session_id: str | None = None
    run_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RetryDecision:
    retry: bool
    delay_ms: int = 0
    reason: str = ""

    def __post_init__(self) -> None:
        if (
            not isinstance(self.delay_ms, int)
            or isinstance(self.delay_ms, bool)
            or self.delay_ms < 0
        ):
            raise ConfigError(f"retry delay_ms must be an int >= 0, got {self.delay_ms!r}")


@runtime_checkable
class RetryPolicy(Protocol):
    def decide(self, context: RetryContext) -> RetryDecision | Awaitable[RetryDecision]: ...


def _non_negative_int(name: str, value: Any, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


DEFAULT_MAX_DELAY_MS: Final = 60_000
"""The longest single wait, backoff or Retry-After. Like the official SDKs, a
server's Retry-After of a few (tens of) seconds is honoured by default."""


class DefaultRetryPolicy:
    """Exponential backoff: ``base_delay_ms * 2**(attempt-1)``, capped at
    ``max_delay_ms``. A provider's ``retryAfterMs`` raises the delay to at least
    that value; if it asks for longer than ``max_delay_ms`` the policy gives up
    instead of retrying early (the cap bounds how long a run can stall).

    ``jitter=True`` (the default) waits a uniform draw in ``[0.75 * backoff,
    backoff]``, the official OpenAI client's rule: clients failing together do
    not retry in step, yet every wait keeps three quarters of its schedule, so
    waits always grow until the cap (full jitter, ``[0, backoff]``, could draw
    a second wait shorter than the first, which reads as no backoff at all).
    ``seed`` makes the draws repeatable in tests and ``jitter=False`` gives
    the plain schedule. A Retry-After is never shortened by jitter."""

    def __init__(
        self,
        max_attempts: int = 3,
        base_delay_ms: int = 100,
        max_delay_ms: int = DEFAULT_MAX_DELAY_MS,
        *,
        jitter: bool = True,
        seed: int | None = None,
    ) -> None:
        self.max_attempts = _non_negative_int("max_attempts", max_attempts, 1)
        self.base_delay_ms = _non_negative_int("base_delay_ms", base_delay_ms)
        self.max_delay_ms = _non_negative_int("max_delay_ms", max_delay_ms)
        if not isinstance(jitter, bool):
            raise ConfigError(f"jitter must be a bool, got {jitter!r}")
        self.jitter = jitter
        self._random = random.Random(seed)

    def backoff_ms(self, attempt: int) -> int:
        exponent = max(attempt - 1, 0)
        if exponent > 62:  # the cap was reached long before; skip a huge shift
            capped = self.max_delay_ms
        else:
            capped = min(self.base_delay_ms << exponent, self.max_delay_ms)
        if not self.jitter:
            return capped
        # Integer form of capped * (1 - 0.25 * random()): never below 75 %.
        return capped - self._random.randint(0, capped // 4)

    def decide(self, context: RetryContext) -> RetryDecision:
        info = context.error
        if is_abort_error_info(info):
            return RetryDecision(False, 0, REASON_ABORTED)
        if context.output_started:
            return RetryDecision(False, 0, REASON_OUTPUT_STARTED)
        if not is_transient_error_info(info):
            return RetryDecision(False, 0, REASON_NOT_TRANSIENT)
        if context.attempt >= self.max_attempts:
            return RetryDecision(False, 0, REASON_MAX_ATTEMPTS)
        delay = self.backoff_ms(context.attempt)
        retry_after = info.get("retryAfterMs")
        if isinstance(retry_after, int) and not isinstance(retry_after, bool) and retry_after > 0:
            if retry_after > self.max_delay_ms:
                return RetryDecision(False, 0, REASON_RETRY_AFTER_TOO_LONG)
            delay = max(delay, retry_after)
        return RetryDecision(True, delay, REASON_TRANSIENT)


def create_default_retry_policy(
    max_attempts: int = 3,
    base_delay_ms: int = 100,
    max_delay_ms: int = DEFAULT_MAX_DELAY_MS,
    *,
    jitter: bool = True,
    seed: int | None = None,
) -> DefaultRetryPolicy:
    return DefaultRetryPolicy(max_attempts, base_delay_ms, max_delay_ms, jitter=jitter, seed=seed)


@dataclass(frozen=True, slots=True)
class RetryOptions:
    """Retry config for an agent or a run. ``policy`` replaces the default
    policy entirely; the numeric fields configure the default one. Error
    texts are masked with the agent's redactor (its ``secrets=``): retry
    keeps no secrets of its own."""

    policy: RetryPolicy | None = field(default=None, metadata=NOT_JSON)
    max_attempts: int = 3
    base_delay_ms: int = 100
    max_delay_ms: int = DEFAULT_MAX_DELAY_MS
    jitter: bool = True
    seed: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.policy is not None and not callable(getattr(self.policy, "decide", None)):
            raise ConfigError("retry policy must have a decide(context) method")
        _non_negative_int("max_attempts", self.max_attempts, 1)
        _non_negative_int("base_delay_ms", self.base_delay_ms)
        _non_negative_int("max_delay_ms", self.max_delay_ms)
        if not isinstance(self.jitter, bool):
            raise ConfigError(f"retry jitter must be a bool, got {self.jitter!r}")
        if self.seed is not None and (
            not isinstance(self.seed, int) or isinstance(self.seed, bool)
        ):
            raise ConfigError(f"retry seed must be an int, got {self.seed!r}")
        if not isinstance(self.metadata, Mapping):
            raise ConfigError("retry metadata must be a mapping")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RetryOptions:
        """From the camelCase form (config files, RPC) or snake_case keys, by
        the rule of :mod:`prism._options` (a policy object only by its Python
        name ``policy``); unknown keys are refused so typos do not go silent."""
        if isinstance(data, Mapping) and "secrets" in data:
            raise ConfigError(
                "unknown retry option 'secrets': secrets are configured once, on the agent "
                "(create_agent(secrets=...)), whose redactor masks retry errors"
            )
        return cls(**options_from_mapping(cls, data, what="retry"))

    def resolve_policy(self) -> RetryPolicy:
        if self.policy is not None:
            return self.policy
        return create_default_retry_policy(
            self.max_attempts,
            self.base_delay_ms,
            self.max_delay_ms,
            jitter=self.jitter,
            seed=self.seed,
        )


async def decide_retry(policy: RetryPolicy, context: RetryContext) -> RetryDecision:
    """Ask a sync or async policy. A policy that raises or answers with a
    non-decision means "do not retry" (fail closed)."""
    try:
        outcome: Any = policy.decide(context)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except Exception as error:
        return RetryDecision(False, 0, f"policy_failed:{type(error).__name__}")
    if not isinstance(outcome, RetryDecision):
        return RetryDecision(False, 0, "policy_returned_non_decision")
    return outcome


def clamp_middleware_decision(original: RetryDecision, updated: Any) -> RetryDecision:
    """Apply what ``retry`` middleware returned for ``{"context", "decision"}``:
    middleware may stop a retry or shorten its delay, never start a retry the
    policy refused or lengthen the wait. Anything unreadable keeps ``original``."""
    candidate = updated.get("decision") if isinstance(updated, Mapping) else updated
    if not isinstance(candidate, RetryDecision):
        return original
    if not original.retry or not candidate.retry:
        return RetryDecision(False, 0, candidate.reason or original.reason)
    return RetryDecision(True, min(candidate.delay_ms, original.delay_ms), candidate.reason)


_REFUSAL_TEXT: Final[dict[str, str]] = {
    REASON_MAX_ATTEMPTS: "gave up after {attempts} attempt(s) (max_attempts)",
    REASON_RETRY_AFTER_TOO_LONG: (
        "the server asked to wait {retry_after} ms, longer than max_delay_ms allows"
    ),
    "policy_returned_non_decision": "the retry policy did not return a RetryDecision",
}


def with_refusal(info: ErrorInfo, decision: RetryDecision, attempts: int) -> ErrorInfo:
    """``info`` saying why a transient failure was not retried: the message
    gains "(not retried: ...)" and ``details.retry`` holds the stable reason.
    Non-transient failures and aborts are returned as they are."""
    if decision.retry or not is_transient_error_info(info):
        return info
    reason = decision.reason or "refused"
    template = _REFUSAL_TEXT.get(reason)
    if template is None:
        if reason.startswith("policy_failed:"):
            template = "the retry policy raised " + reason.partition(":")[2]
        else:
            template = f"refused by retry middleware or policy ({reason})"
    text = template.format(attempts=attempts, retry_after=info.get("retryAfterMs", "?"))
    out: ErrorInfo = {**info, "message": f"{info['message']} (not retried: {text})"}
    details: dict[str, Any] = dict(info.get("details") or {})
    details["retry"] = {"attempts": attempts, "refused": reason}
    out["details"] = details
    return out


async def wait_for_retry(
    decision: RetryDecision, sleep: Callable[[float], Awaitable[Any]] = anyio.sleep
) -> None:
    """Sleep ``decision.delay_ms`` (seconds to ``sleep``). Cancelling the caller's
    scope (``session.abort()``) interrupts the wait; inject ``sleep`` for a fake
    clock in tests. No-op when the decision is not to retry."""
    if not decision.retry:
        return
    await sleep(decision.delay_ms / 1000)
