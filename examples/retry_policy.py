"""Classify provider errors and compute retry delays with a fake clock."""

from __future__ import annotations

import anyio

from prism import RetryOptions
from prism.contracts import ErrorInfo
from prism.retry import RetryContext, decide_retry, is_transient_error_info, wait_for_retry


async def main() -> None:
    for info in (
        {"message": "upstream overloaded", "code": "503"},
        {"message": "connect ETIMEDOUT"},
        {"message": "invalid api key", "code": "auth", "status": 401},
    ):
        print(f"{info['message']!r}: transient={is_transient_error_info(info)}")

    # jitter off to print the plain schedule; by default each wait is drawn
    # from 75-100 % of its backoff, and "seed" makes the draws repeatable.
    options = RetryOptions.from_json(
        {"maxAttempts": 4, "baseDelayMs": 100, "maxDelayMs": 300, "jitter": False}
    )
    policy = options.resolve_policy()
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    error: ErrorInfo = {"message": "rate limited", "code": "429"}
    for attempt in range(1, 5):
        decision = await decide_retry(policy, RetryContext(attempt=attempt, error=error))
        print(
            f"attempt {attempt}: retry={decision.retry} delay={decision.delay_ms}ms ({decision.reason})"
        )
        await wait_for_retry(decision, sleep=fake_sleep)
    print("slept (s):", slept)
    after_output = await decide_retry(
        policy, RetryContext(attempt=1, error=error, output_started=True)
    )
    print("after output started:", after_output.retry, after_output.reason)


if __name__ == "__main__":
    anyio.run(main)
