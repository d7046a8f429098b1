from __future__ import annotations

from example_runner import run_example


def _run(name: str) -> list[str]:
    completed = run_example(name)
    return completed.stdout.splitlines()


def test_session_stores_example() -> None:
    assert _run("session_stores.py") == [
        "refused: duplicate session entry id 'e2'",
        "jsonl entries: ['e1', 'e2', 'e3', 'e5']",
        "quarantined: [(4, 'invalid JSON')]",
        "sqlite entries: ['e1', 'e2', 'e3', 'e5']",
        "sqlite sessions: ['demo']",
    ]


def test_session_leases_example() -> None:
    assert _run("session_leases.py") == [
        "claim refused: session 'demo' is busy: a run in another process or store holds it",
        "run refused: session_busy",
        "other session free: Hello!",
        "after release: Hello!",
        "lock files left: False",
    ]


def test_compaction_example_redacts_and_rebuilds() -> None:
    out = _run("compaction.py")
    assert out == [
        "should compact: True",
        "summary:",
        "user: Deploy with key [REDACTED]",
        "assistant: Deployed.",
        "user: Now roll back.",
        "data: {'throughEntryId': 'e3', 'keepEntryIds': ['e4', 'e5'], "
        "'strategy': 'default-compaction', 'trigger': 'manual'}",
        "raw branch kept: 6 entries",
        "provider messages: ['Rolled back.', 'Status?']",
        "again right after: False",
    ]
    assert "sk-example" not in "\n".join(out)
