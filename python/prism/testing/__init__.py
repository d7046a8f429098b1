"""Helpers for hosts' and provider packages' own tests (no network, no credentials)."""

from prism.testing.provider_conformance import (
    assert_abort_is_observed,
    assert_no_secret_leak,
    assert_provider_stream_conforms,
    assert_serialized_request_covers_content,
    assert_tool_call_deltas_reconstruct,
    assert_usage_accounting,
    collect_provider_events,
)

__all__ = [
    "assert_abort_is_observed",
    "assert_no_secret_leak",
    "assert_provider_stream_conforms",
    "assert_serialized_request_covers_content",
    "assert_tool_call_deltas_reconstruct",
    "assert_usage_accounting",
    "collect_provider_events",
]
