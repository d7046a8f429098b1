from __future__ import annotations

import copy
import sys
import types
from typing import Any

import pytest

from prism.assembly import (
    ContextRequest,
    MessageGroups,
    Skill,
    assemble_provider_input,
    text_message,
)
from prism.contracts import Message, ModelConfig
from prism.errors import ConfigError
from prism.middleware import create_middleware_registry
from prism.security import NOOP_REDACTOR
from prism.tools import ToolContext, create_tool_registry, define_tool

MODEL: ModelConfig = {"provider": "mock", "model": "demo"}


def noop(args: dict[str, Any], ctx: ToolContext) -> None:
    return None


def texts(messages: list[Message]) -> list[str]:
    return [str(m["content"][0].get("text")) for m in messages]


class Project:
    name = "project"

    def provide(self, request: ContextRequest) -> str:
        return f"{len(request.messages)} message(s), meta={dict(request.metadata)}"


@pytest.mark.anyio
async def test_minimal_request() -> None:
    request = await assemble_provider_input(model=MODEL, input="Hello", redactor=NOOP_REDACTOR)
    assert request == {
        "model": MODEL,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
    }


@pytest.mark.anyio
async def test_everything_together_and_history_untouched() -> None:
    history = [text_message("user", "old"), text_message("assistant", "reply")]
    frozen = copy.deepcopy(history)
    registry = create_tool_registry(
        [define_tool("read", noop, description="Read."), define_tool("rm", noop)], deny=["rm"]
    )
    request = await assemble_provider_input(
        model=MODEL,
        input="Explain",
        history=history,
        summaries=["before"],
        system_instructions="Be brief.",
        context_providers=[Project()],
        skills=[Skill("review", "Look closely.")],
        tools=registry,
        options={"temperature": 0},
        metadata={"requestId": "r1"},
        redactor=NOOP_REDACTOR,
    )
    assert texts(request["messages"]) == [
        "System instruction:\nBe brief.",
        "Conversation summary:\nbefore",
        "Context project:\n5 message(s), meta={'requestId': 'r1'}",
        "Skill review\nLook closely.",
        "old",
        "reply",
        "Explain",
    ]
    assert request["tools"] == [{"name": "read", "description": "Read."}]
    assert request["options"] == {"temperature": 0}
    assert request["metadata"] == {"requestId": "r1"}
    assert history == frozen


@pytest.mark.anyio
async def test_hook_order_is_input_context_prompt() -> None:
    order: list[str] = []
    middleware = create_middleware_registry()
    for hook in ("prompt_build", "context", "input_assembly"):

        def record(value: Any, next: Any, hook: str = hook) -> Any:
            order.append(hook)
            return next(value)

        middleware.use(hook, record)  # type: ignore[arg-type]
    await assemble_provider_input(
        model=MODEL, input="x", middleware=middleware, redactor=NOOP_REDACTOR
    )
    assert order == ["input_assembly", "context", "prompt_build"]


@pytest.mark.anyio
async def test_prompt_middleware_cannot_grant_tools_but_can_edit_messages() -> None:
    middleware = create_middleware_registry()

    def grab(payload: Any, next: Any) -> Any:
        payload["tools"].append({"name": "rm"})
        payload["tools"][0]["description"] = "hijacked"
        return next({**payload, "messages": [*payload["messages"], text_message("user", "extra")]})

    middleware.use("prompt_build", grab)
    read = define_tool("read", noop, description="Read.")
    request = await assemble_provider_input(
        model=MODEL, input="x", tools=[read], middleware=middleware, redactor=NOOP_REDACTOR
    )
    assert request["tools"] == [{"name": "read", "description": "Read."}]
    assert texts(request["messages"]) == ["x", "extra"]


@pytest.mark.anyio
async def test_prompt_middleware_returning_garbage_fails_clearly() -> None:
    middleware = create_middleware_registry()
    middleware.use("prompt_build", lambda payload, next: ["not", "a", "payload"])
    with pytest.raises(ConfigError, match="prompt_build middleware must return a dict"):
        await assemble_provider_input(
            model=MODEL, input="x", middleware=middleware, redactor=NOOP_REDACTOR
        )


@pytest.mark.anyio
async def test_no_tools_means_no_tools_key() -> None:
    request = await assemble_provider_input(
        model=MODEL, input="x", tools=[], redactor=NOOP_REDACTOR
    )
    assert "tools" not in request


@pytest.mark.anyio
async def test_tool_results_after_their_assistant_message() -> None:
    history: list[Message] = [
        text_message("user", "q"),
        {
            "role": "assistant",
            "content": [{"type": "tool_call", "id": "c1", "name": "read", "arguments": {}}],
        },
    ]
    request = await assemble_provider_input(
        model=MODEL,
        history=history,
        tool_results=[{"toolCallId": "c1", "name": "read", "value": "data", "isError": True}],
        redactor=NOOP_REDACTOR,
    )
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "tool"]
    assert request["messages"][2]["content"][0] == {
        "type": "tool_result",
        "toolCallId": "c1",
        "name": "read",
        "result": "data",
        "isError": True,
    }


@pytest.mark.anyio
async def test_custom_builders_are_used() -> None:
    class InputBuilder:
        async def build(self, input: Any = None, **context: Any) -> list[Message]:
            assert "middleware" in context and "history" in context
            return [text_message("user", f"custom:{input}")]

    class PromptBuilder:
        async def build(self, messages: Any, **kwargs: Any) -> list[Message]:
            return [text_message("system", "P"), *messages]

    request = await assemble_provider_input(
        model=MODEL,
        input="x",
        input_builder=InputBuilder(),
        prompt_builder=PromptBuilder(),
        redactor=NOOP_REDACTOR,
    )
    assert texts(request["messages"]) == ["P", "custom:x"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "mock/demo"}, "model must be a ModelConfig"),
        ({"options": [1]}, "options must be a mapping"),
        ({"metadata": "m"}, "metadata must be a mapping"),
        ({"skills": ["review"]}, "skills must be Skill objects"),
        ({"tools": [3]}, "tools must be ToolDefinitions or declarations"),
    ],
)
async def test_bad_arguments(kwargs: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        await assemble_provider_input(
            **{"model": MODEL, "input": "x", "redactor": NOOP_REDACTOR, **kwargs}
        )


@pytest.mark.anyio
async def test_attention_compiler_plugs_into_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    reports: list[Any] = []

    def compile_attention(**kwargs: Any) -> dict[str, Any]:
        seen.update(kwargs)
        groups: MessageGroups = kwargs["groups"]
        shrunk = MessageGroups(
            instructions=groups.instructions,
            history=[text_message("user", "stub")],
            input=groups.input,
        )
        return {"groups": shrunk, "mutated": True, "report": {"used": 10, "usedAfter": 5}}

    fake = types.ModuleType("prism.attention.compile")
    fake.compile_attention = compile_attention  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "prism.attention.compile", fake)
    order: list[str] = []
    middleware = create_middleware_registry()
    middleware.use(
        "input_assembly", lambda value, next: order.append("input_assembly") or next(value)
    )
    sticky = object()
    request = await assemble_provider_input(
        model=MODEL,
        input="now",
        history=[text_message("user", "very long")],
        middleware=middleware,
        attention_compiler={"triggerRatio": 0.5},
        attention_sticky=sticky,
        on_attention_report=lambda report: (reports.append(report), order.append("report")),
        session_id="s1",
        run_id="r1",
        turn=2,
        redactor=NOOP_REDACTOR,
    )
    assert texts(request["messages"]) == ["stub", "now"]
    assert reports == [{"used": 10, "usedAfter": 5}]
    assert order == ["report", "input_assembly"]
    assert seen["compiler"] == {"triggerRatio": 0.5} and seen["frontier"] is sticky
    assert (seen["model"], seen["session_id"], seen["run_id"], seen["turn"]) == (
        MODEL,
        "s1",
        "r1",
        2,
    )


@pytest.mark.anyio
async def test_attention_not_mutated_means_no_report(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("prism.attention.compile")
    fake.compile_attention = lambda **kw: {"groups": kw["groups"], "mutated": False}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "prism.attention.compile", fake)
    reports: list[Any] = []
    request = await assemble_provider_input(
        model=MODEL,
        input="x",
        attention_compiler=object(),
        on_attention_report=reports.append,
        redactor=NOOP_REDACTOR,
    )
    assert texts(request["messages"]) == ["x"] and reports == []


@pytest.mark.anyio
async def test_without_a_compiler_nothing_touches_attention(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    empty = types.ModuleType("prism.attention.compile")
    monkeypatch.setitem(sys.modules, "prism.attention.compile", empty)
    with pytest.raises(ImportError, match="compile_attention"):
        await assemble_provider_input(
            model=MODEL, input="x", attention_compiler=object(), redactor=NOOP_REDACTOR
        )
    assert (await assemble_provider_input(model=MODEL, input="x", redactor=NOOP_REDACTOR))[
        "messages"
    ]


@pytest.mark.anyio
async def test_attention_returning_garbage_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("prism.attention.compile")
    fake.compile_attention = lambda **kw: {"groups": []}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "prism.attention.compile", fake)
    with pytest.raises(ConfigError, match="compile_attention returned no MessageGroups"):
        await assemble_provider_input(
            model=MODEL, input="x", attention_compiler=object(), redactor=NOOP_REDACTOR
        )


@pytest.mark.anyio
async def test_real_attention_compiler_shrinks_old_tool_results() -> None:
    import prism.attention as attention  # a broken native build must fail here, not skip

    history: list[Message] = []
    for i in range(6):
        history.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_call", "id": f"c{i}", "name": "read", "arguments": {}}],
            }
        )
        history.append(
            {
                "role": "tool",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": f"c{i}",
                        "name": "read",
                        "result": "x" * 4000,
                    }
                ],
            }
        )
    frozen = copy.deepcopy(history)
    reports: list[Any] = []
    seen_by_context: list[int] = []

    class Counting:
        name = "count"

        def provide(self, request: ContextRequest) -> str:
            seen_by_context.append(len(request.messages))
            return "ctx"

    request = await assemble_provider_input(
        model={"provider": "mock", "model": "m", "limits": {"contextWindow": 4000}},
        input="go",
        history=history,
        context_providers=[Counting()],
        attention_compiler={"triggerRatio": 0.5, "keepLast": 1},
        attention_sticky=attention.create_attention_sticky_frontier(),
        on_attention_report=reports.append,
        redactor=NOOP_REDACTOR,
    )
    assert len(reports) == 1 and reports[0].stubbed_tool_results == 5
    results = [m["content"][0] for m in request["messages"] if m["role"] == "tool"]
    assert [r["result"] == "x" * 4000 for r in results] == [False] * 5 + [True]  # type: ignore[typeddict-item]
    assert texts(request["messages"])[0] == "Context count:\nctx"
    assert seen_by_context == [13]
    assert history == frozen
