"""Web access for agents: a fetch tool guarded against server-side request forgery."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.web.fetch import (
        FetchedPage,
        WebFetchLimits,
        fetch_url,
        web_fetch_tool,
    )
    from prism.web.guard import (
        Resolver,
        WebFetchError,
        address_problem,
        check_url,
        system_resolver,
    )

_EXPORTS: dict[str, str] = {
    "WebFetchError": "prism.web.guard",
    "Resolver": "prism.web.guard",
    "address_problem": "prism.web.guard",
    "check_url": "prism.web.guard",
    "system_resolver": "prism.web.guard",
    "FetchedPage": "prism.web.fetch",
    "WebFetchLimits": "prism.web.fetch",
    "fetch_url": "prism.web.fetch",
    "web_fetch_tool": "prism.web.fetch",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "FetchedPage",
    "Resolver",
    "WebFetchError",
    "WebFetchLimits",
    "address_problem",
    "check_url",
    "fetch_url",
    "system_resolver",
    "web_fetch_tool",
]
