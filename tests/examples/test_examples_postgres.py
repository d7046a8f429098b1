from __future__ import annotations

import os

from example_runner import run_example


def test_postgres_sessions_example(pg_dsn: str) -> None:
    env = {**os.environ, "PRISM_POSTGRES_DSN": pg_dsn}
    out = run_example("postgres_sessions.py", env=env).stdout.splitlines()
    assert out == [
        "worker b: session_busy",
        "answer: Hello from Postgres.",
        "entries seen by b: ['user', 'assistant']",
        "refused: duplicate_entry",
        "still: 2 entries",
    ]
