"""The adapter and the OAuth single-flight refresh under both anyio backends."""

from __future__ import annotations

import anyio
import pytest
from providers_real_support import (
    ByteStream,
    Recorder,
    chunk,
    collect,
    make_provider,
    simple_request,
    split_every,
    sse_lines,
    sse_response,
)

from prism.security import OAuthToken, create_oauth_credential

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_stream_and_cancellation_on_each_backend() -> None:
    body = sse_lines([chunk(content="Hel"), chunk(content="lo", finish="stop")])
    events = await collect(
        make_provider(Recorder(lambda: sse_response(ByteStream(split_every(body, 7))))),
        simple_request(),
    )
    assert [e["type"] for e in events] == ["content_delta", "content_delta", "done"]

    stream = ByteStream([sse_lines([chunk(content="a")], done=False)], hang=anyio.sleep_forever)
    provider = make_provider(Recorder(sse_response(stream)))
    with anyio.CancelScope() as scope:
        async for _event in provider.generate(simple_request()):
            scope.cancel()
    assert stream.closed


async def test_single_flight_refresh_on_each_backend() -> None:
    release = anyio.Event()
    calls = 0

    async def refresh(current: OAuthToken | None) -> OAuthToken:
        nonlocal calls
        calls += 1
        await release.wait()
        return OAuthToken("at-backend-token")

    oauth = create_oauth_credential(refresh)
    got: list[str] = []

    async def caller() -> None:
        got.append((await oauth.resolve()).value)

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(caller)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert calls == 1 and got == ["at-backend-token"] * 4
