"""Ordered middleware with the "event" error policy."""

from __future__ import annotations

from typing import Any

import anyio

from prism import create_middleware_registry


async def main() -> None:
    errors: list[str] = []
    middleware = create_middleware_registry(
        error_policy="event",
        on_error=lambda hook, error: errors.append(f"{hook}: {type(error).__name__}"),
    )

    async def tag_source(request: Any, next: Any) -> Any:
        return await next({**request, "metadata": {**request["metadata"], "source": "demo"}})

    def broken(request: Any, next: Any) -> Any:
        raise RuntimeError("this middleware has a bug")

    def add_trace(request: Any, next: Any) -> Any:
        return next({**request, "metadata": {**request["metadata"], "trace": "t-1"}})

    middleware.use("provider_request", tag_source)
    middleware.use("provider_request", broken)
    unsubscribe = middleware.use("provider_request", add_trace)

    print(await middleware.run("provider_request", {"metadata": {}}))
    print("reported:", errors)
    unsubscribe()
    print(await middleware.run("provider_request", {"metadata": {}}))


if __name__ == "__main__":
    anyio.run(main)
