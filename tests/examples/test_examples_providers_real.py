from __future__ import annotations

from example_runner import run_example


def test_openai_compatible_mock_example_runs_and_redacts_the_key() -> None:
    completed = run_example("openai_compatible_mock.py")
    assert completed.stdout.splitlines() == [
        "tool call: {'id': 'call_1', 'name': 'weather', 'arguments': {'city': 'Oslo'}}",
        "text: Let me check the weather.",
        "stop: tool_calls usage: {'inputTokens': 1200, 'outputTokens': 40, "
        "'totalTokens': 1240, 'cacheReadTokens': 1000}",
        "cost: $0.000244",
        "error: 429 3000 openai: HTTP 429: Rate limit reached for key [REDACTED]",
    ]
    assert "sk-example" not in completed.stdout + completed.stderr


def test_native_providers_cache_example_reads_more_with_auto_breakpoints() -> None:
    completed = run_example("native_providers_cache.py")
    assert completed.stdout.splitlines() == [
        "auto: last turn read 3552 of 3885 input tokens from the cache",
        "system: last turn read 2412 of 3885 input tokens from the cache",
        "calibrated after 6 turns: ['code', 'prose', 'tool']",
    ]
