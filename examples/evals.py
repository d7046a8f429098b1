"""An eval suite over a mock agent: cases in code and in a JSONL file (one
broken row, reported with its line), text, tool-call and budget checks, an
LLM judge with its own (mock) provider, repeats, the three reports, and a
comparison that finds a regression. Run: python examples/evals.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from prism import create_agent, create_mock_provider, create_sqlite_session_store, define_tool
from prism.evals import (
    Case,
    EvalContext,
    LlmJudge,
    Pricing,
    ToolCalls,
    compare_reports,
    evaluator,
    load_dataset,
    read_report,
    render_html,
    run_eval,
)
from prism.providers import provider_done, provider_text_delta, provider_tool_call

USAGE = {"inputTokens": 120, "outputTokens": 30}


def build_agent(*, forgetful: bool = False) -> Any:
    """A mock 'model': answers capitals, and checks the weather with a tool."""

    def model(request: dict[str, Any]) -> list[Any]:
        last = request["messages"][-1]
        if last["role"] == "tool":
            report = last["content"][0]["result"]
            return [provider_text_delta(f"It is {report}."), provider_done(usage=USAGE)]
        question = last["content"][0]["text"]
        if question.startswith("Weather in "):
            city = question.removeprefix("Weather in ").rstrip("?")
            return [provider_tool_call("w1", "weather", {"city": city}), provider_done(usage=USAGE)]
        answer = {"France": "Paris", "Japan": "Tokyo"}.get(question.split()[-1].rstrip("?"), "?")
        if forgetful and answer == "Paris":
            answer = "I forget."
        return [provider_text_delta(answer), provider_done(usage=USAGE)]

    weather = define_tool(
        "weather",
        lambda args, ctx: f"sunny in {args['city']}",
        description="Current weather for a city.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    return create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(model),
        tools=[weather],
    )


@evaluator
def concise(ctx: EvalContext) -> tuple[bool, str]:
    return len(ctx.output.split()) <= 10, f"{len(ctx.output.split())} words"


# The judge has its own provider; this mock one always approves.
judge = LlmJudge(
    provider=create_mock_provider(
        [provider_text_delta('{"pass": true, "score": 1, "reason": "on topic"}'), provider_done()]
    )
)

IN_CODE = [
    Case(
        "weather-oslo",
        "Weather in Oslo?",
        rubric="Reports the weather in Oslo.",
        evaluators=(ToolCalls([{"name": "weather", "arguments": {"city": "Oslo"}}]), judge),
    ),
]
ROWS = [
    '{"name": "france", "input": "Capital of France?", "expected": "Paris",'
    ' "assert": [{"type": "equals"}]}',
    '{"name": "japan", "input": "Capital of Japan?", "assert": [{"type": "contains", "value": "Tokyo"}]}',
    '{"name": "broken", "input": ',
]


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "capitals.jsonl").write_text("\n".join(ROWS) + "\n", encoding="utf-8")
        capitals = load_dataset(home / "capitals.jsonl")
        print("left out:", [f"line {p.line}: {p.message.split(':')[0]}" for p in capitals.problems])
        cases = [*IN_CODE, *capitals.cases]

        async def run(agent: Any, name: str) -> Any:
            store = create_sqlite_session_store(home / f"{name}.sqlite")
            return await run_eval(
                cases, agent, evaluators=[concise], repeats=2, concurrency=4,
                pricing=Pricing(input_per_million=3.0, output_per_million=15.0),
                store=store, store_label=str(home / f"{name}.sqlite"), name=name,
            )  # fmt: skip

        before = await run(build_agent(), "before")
        print("pass rate:", before.pass_rate, before.case_pass_rates())
        print("evaluators:", before.evaluator_pass_rates())
        weather = before.runs[0]
        print("tool calls:", weather.tool_calls)
        print("judge verdict:", json.loads(weather.evaluators[2].details["verdict"])["reason"])
        print("cost per run:", f"{weather.cost:.5f}")
        print("session kept:", weather.session_id is not None)

        after = await run(build_agent(forgetful=True), "after")
        before.write_json(home / "before.json")
        after.write_json(home / "after.json")
        comparison = compare_reports(
            read_report(home / "before.json"), read_report(home / "after.json")
        )
        print("regressions:", [str(change) for change in comparison.regressions])
        page = render_html(after)
        print("html has plots:", page.count("<svg") == 3, "no script:", "<script" not in page)


anyio.run(main)
