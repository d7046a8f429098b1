"""examples/subagents.py runs as documented."""

from __future__ import annotations

from example_runner import run_example


def test_subagents_example_pauses_on_the_reviewer_and_resumes() -> None:
    lines = run_example("subagents.py").stdout.splitlines()
    # The two children run in parallel: their events may interleave.
    assert sorted(lines[:4]) == [
        "event: subagent_started explorer new",
        "event: subagent_started reviewer new",
        "event: subagent_stopped explorer success",
        "event: subagent_stopped reviewer suspended",
    ]
    assert lines[4:] == [
        "paused on: reviewer -> post_comment {'text': 'LGTM'}",
        "event: subagent_started reviewer resumed",
        "event: subagent_stopped reviewer success",
        "answer: Done. explorer: parser is in src/parse.py; reviewer: posted comment-1",
        "outcomes: [('explorer', 'success'), ('reviewer', 'success')]",
        'child linked to: "lead"',
    ]
