from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.inspect.browser import BrowserMissing, make_driver
from tests.inspect.demo_sessions import build_demo_session, build_plain_session

from prism.stores import create_jsonl_session_store


class DemoFile:
    def __init__(
        self, path: Path, ids: dict[str, str], plain_requests: list[dict[str, Any]]
    ) -> None:
        self.path = path
        self.ids = ids
        self.plain_requests = plain_requests


def write_demo(path: Path) -> DemoFile:
    async def build() -> DemoFile:
        store = create_jsonl_session_store(path)
        ids = await build_demo_session(store)
        requests = await build_plain_session(store)
        return DemoFile(path, ids, requests)

    return anyio.run(build)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoFile:
    """The demo and plain sessions in one JSONL file (read-only for tests)."""
    return write_demo(tmp_path_factory.mktemp("inspect") / "sessions.jsonl")


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """One headless Chromium per test module. Missing Chromium fails."""
    try:
        browser = make_driver()
    except BrowserMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield browser
    finally:
        browser.quit()
