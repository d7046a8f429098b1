"""``prism eval`` in a real subprocess: run a dataset against a host's agent,
write the three reports and the sessions, gate on the pass rate, and
compare two runs to find a seeded regression."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import anyio
from tests.cli.conftest import SAFETY_TIMEOUT, prism_executable, run_prism

from prism import create_sqlite_session_store

HOST = textwrap.dedent(
    """
    from prism import create_agent, create_mock_provider
    from prism.evals import EvalSuite, Regex, load_dataset
    from prism.providers import provider_done, provider_text_delta

    def _model(wrong):
        def reply(request):
            question = request["messages"][-1]["content"][0]["text"]
            answer = "Paris" if "France" in question else "Tokyo"
            if question == wrong:
                answer = "<b>Lyon</b>"
            return [provider_text_delta(answer), provider_done(usage={"inputTokens": 9})]
        return reply

    def agent(wrong=None):
        return create_agent(
            model={"provider": "mock", "model": "qa"}, provider=create_mock_provider(_model(wrong))
        )

    def regressed():
        return EvalSuite(
            load_dataset("qa.jsonl"), agent("Capital of France?"),
            evaluators=[Regex(".")], defaults={"concurrency": 2}, name="qa",
        )
    """
)

ROWS = [
    {"name": "france", "input": "Capital of France?", "expected": "Paris",
     "assert": [{"type": "equals"}]},
    {"name": "japan", "input": "Capital of Japan?", "assert": [{"type": "contains", "value": "Tokyo"}]},
]  # fmt: skip


def _project(tmp_path: Path) -> Path:
    (tmp_path / "evalhost.py").write_text(HOST, encoding="utf-8")
    (tmp_path / "qa.jsonl").write_text(
        "\n".join(json.dumps(row) for row in ROWS) + "\n", encoding="utf-8"
    )
    return tmp_path


def test_eval_run_writes_reports_and_compare_finds_the_regression(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    project = _project(tmp_path)
    env = {**cli_env, "PWD": str(project)}

    def prism(*args: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [str(prism_executable()), *args], capture_output=True, text=True,
            env=env, cwd=project, timeout=SAFETY_TIMEOUT, check=False,
        )  # fmt: skip
        return done.returncode, done.stdout, done.stderr

    code, out, err = prism("eval", "run", "qa.jsonl", "--agent", "evalhost:agent", "--out", "a")
    assert (code, err) == (0, "")
    assert "france" in out and "qa: 100.0% passed" in out
    report = json.loads((project / "a" / "report.json").read_text())
    assert report["summary"]["passRate"] == 1.0
    html = (project / "a" / "report.html").read_text()
    assert html.startswith("<!doctype html>") and "<svg" in html
    session = report["runs"][0]["sessionId"]
    store = create_sqlite_session_store(project / "a" / "sessions.sqlite")
    entries = anyio.run(store.list, session)
    assert entries[0]["message"]["content"][0]["text"] == "Capital of France?"

    code, out, err = prism("eval", "run", "evalhost:regressed", "--out", "b", "--repeats", "2")
    assert code == 1
    assert "pass rate 50.0% is below 100.0%" in err
    head = json.loads((project / "b" / "report.json").read_text())
    assert head["config"]["repeats"] == 2 and head["config"]["concurrency"] == 2
    assert "&lt;b&gt;Lyon&lt;/b&gt;" in (project / "b" / "report.html").read_text()

    code, out, err = prism("eval", "compare", "a/report.json", "b/report.json", "--json")
    assert code == 1
    assert json.loads(out)["regressions"] == [
        {"case": "france", "before": 1.0, "after": 0.0, "evaluators": ["equals"]}
    ]


def test_eval_usage_errors_are_one_line(tmp_path: Path, cli_env: dict[str, str]) -> None:
    dataset = _project(tmp_path) / "qa.jsonl"
    done = run_prism(cli_env, "eval", "run", str(dataset))
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"prism: error: eval: a dataset file needs --agent MODULE:FACTORY ({dataset})\n"
    )
