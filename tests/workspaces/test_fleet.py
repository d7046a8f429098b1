"""Two real worker processes race for one workspace checkpoint: the winner
starts a multi-step write, its lease lapses, the other takes over and
saves; the first is fenced out mid-write and the survivor's state stands."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.workspaces.fleet_worker import SCOPE

from prism.workspaces import create_fenced_store

pytestmark = pytest.mark.anyio

WORKER = Path(__file__).with_name("fleet_worker.py")
KEY = "workspace/shared"


class Worker:
    def __init__(self, store: str, name: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), store, KEY, name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def answer(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            assert self.proc.stderr is not None
            raise AssertionError(f"worker {self.name} said nothing: {self.proc.stderr.read()}")
        return line

    def ask(self, command: str) -> str:
        self.send(command)
        return self.answer()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=60)


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_the_stale_worker_is_fenced_out_mid_write(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, workers: list[Worker]
) -> None:
    store = str(tmp_path / "fleet.db") if backend == "sqlite" else request.getfixturevalue("pg_dsn")
    workers.extend([Worker(store, "one"), Worker(store, "two")])
    for worker in workers:
        worker.send("acquire")  # both at once: exactly one wins
    answers = {worker.name: worker.answer() for worker in workers}
    assert sorted(a.split()[0] for a in answers.values()) == ["acquired", "busy"]
    stale, fresh = sorted(workers, key=lambda w: answers[w.name] == "busy")
    assert stale.ask("write stale-1") == "saved 1"

    # The stale worker's lease runs out while it is between two saves.
    if backend == "sqlite":
        assert fresh.ask("skew 31") == "ok"
    else:
        with psycopg.connect(store, autocommit=True) as conn:
            conn.execute("UPDATE prism_ws_leases SET expires_at = expires_at - 31")
    assert fresh.ask("acquire") == "acquired 2"
    # Fenced by the token alone: the fresh worker has not written yet, so
    # the stale one's version still matches.
    assert stale.ask("write stale-2") == "fenced ERR_PRISM_WORKSPACE_FENCE"
    assert fresh.ask("write fresh-1") == "saved 2"
    assert stale.ask("write stale-3") == "fenced ERR_PRISM_WORKSPACE_FENCE"
    assert fresh.ask("write fresh-2") == "saved 3"
    for worker in workers:
        worker.send("quit")

    reader = create_fenced_store(store)
    final = await reader.load(KEY, scope=SCOPE)
    await reader.close()
    assert final is not None
    assert (final.version, final.fence) == (3, 2)
    assert final.data == {"log": ["stale-1", "fresh-1", "fresh-2"], "by": fresh.name}
