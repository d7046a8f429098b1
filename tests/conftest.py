from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.docker_engine import DockerEngineError, DockerEngineServer
from tests.pg_server import PgServer, PgServerError

# `make test PYTEST_WORKERS=2` runs pytest-xdist with `--dist loadgroup`.
# Each test file is then one unit of work (its module fixtures, such as a
# PostgreSQL server, start once, on one worker); these prefixes share one
# unit instead, because their session fixtures are costly to start twice:
# the private dockerd (with its sandbox image imported) and the chaos
# suite's fakellm/llmock servers.
_SHARED_WORKER = {
    "tests/sandbox/": "docker-engine",
    "tests/examples/test_examples_sandbox.py": "docker-engine",
    "tests/chaos/": "chaos-servers",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        path = item.nodeid.split("::", 1)[0]
        group = next((g for p, g in _SHARED_WORKER.items() if path.startswith(p)), path)
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A throwaway PostgreSQL server for the whole test session (see
    tests/pg_server.py). Missing binaries fail the test: never a skip."""
    try:
        server = PgServer()
    except PgServerError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        server.init()
        server.start()
    except BaseException:
        server.cleanup()
        raise
    yield server
    server.cleanup()


@pytest.fixture
def pg_dsn(pg_server: PgServer) -> str:
    """A DSN for a fresh, empty schema (first on its search path) on the
    throwaway server: to the code under test it is an empty database. A test
    that stopped the server gets it started again before the next test."""
    if not pg_server.running:
        pg_server.start()
    return pg_server.dsn(schema=pg_server.create_schema())


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngineServer]:
    """One private dockerd for the whole session (tests/docker_engine.py).
    A missing engine fails the test: never a skip."""
    try:
        engine = DockerEngineServer()
    except DockerEngineError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        engine.start()
    except DockerEngineError as exc:
        engine.stop()
        pytest.fail(str(exc), pytrace=False)
    try:
        yield engine
    finally:
        engine.stop()
