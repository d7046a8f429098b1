"""Helpers for hosts' and provider packages' own tests (no network, no credentials)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.testing.cache_simulator import (
        CacheSimulator,
    )
    from prism.testing.provider_conformance import (
        assert_abort_is_observed,
        assert_no_secret_leak,
        assert_provider_stream_conforms,
        assert_serialized_request_covers_content,
        assert_tool_call_deltas_reconstruct,
        assert_usage_accounting,
        collect_provider_events,
    )
    from prism.testing.tool_conformance import (
        assert_tool_dispatch_conforms,
    )

_EXPORTS: dict[str, str] = {
    "CacheSimulator": "prism.testing.cache_simulator",
    "assert_abort_is_observed": "prism.testing.provider_conformance",
    "assert_no_secret_leak": "prism.testing.provider_conformance",
    "assert_provider_stream_conforms": "prism.testing.provider_conformance",
    "assert_serialized_request_covers_content": "prism.testing.provider_conformance",
    "assert_tool_call_deltas_reconstruct": "prism.testing.provider_conformance",
    "assert_usage_accounting": "prism.testing.provider_conformance",
    "collect_provider_events": "prism.testing.provider_conformance",
    "assert_tool_dispatch_conforms": "prism.testing.tool_conformance",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "CacheSimulator",
    "assert_abort_is_observed",
    "assert_no_secret_leak",
    "assert_provider_stream_conforms",
    "assert_serialized_request_covers_content",
    "assert_tool_call_deltas_reconstruct",
    "assert_tool_dispatch_conforms",
    "assert_usage_accounting",
    "collect_provider_events",
]
