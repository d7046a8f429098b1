from __future__ import annotations

import copy
from typing import Any

import pytest

from prism.assembly import (
    ContextRequest,
    MessageGroups,
    Skill,
    SystemPromptLayer,
    compose_messages,
    create_default_input_builder,
    create_default_prompt_builder,
    place_tool_results,
    resolve_context_providers,
    text_message,
)
from prism.contracts import Message
from prism.errors import ConfigError, PrismError
from prism.middleware import create_middleware_registry


def user(text: str) -> Message:
    return text_message("user", text)


def assistant_calls(*ids: str) -> Message:
    return {
        "role": "assistant",
        "content": [{"type": "tool_call", "id": i, "name": "lookup", "arguments": {}} for i in ids],
    }


def texts(messages: list[Message]) -> list[str]:
    out = []
    for message in messages:
        block: Any = message["content"][0]
        out.append(f"{message['role']}:{block.get('text', block.get('toolCallId'))}")
    return out


@pytest.mark.anyio
async def test_reference_example_shape() -> None:
    messages = await create_default_input_builder().build(
        "Hello",
        system_instructions="Answer briefly.",
        attachments=[{"name": "notes.md", "text": "Remember the release date."}],
    )
    assert messages == [
        {
            "role": "system",
            "content": [{"type": "text", "text": "System instruction:\nAnswer briefly."}],
        },
        {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attachment notes.md:\nRemember the release date."}
            ],
        },
    ]


@pytest.mark.anyio
async def test_an_instruction_prefix_is_a_label_the_host_can_change_or_drop() -> None:
    messages = await create_default_input_builder().build(
        "Hi",
        system_instructions=[
            "Default label.",
            {"label": "Role", "text": "You review code."},
            {"label": "", "text": "Sent as written."},
        ],
    )
    assert [m["content"][0]["text"] for m in messages if m["role"] == "system"] == [
        "System instruction:\nDefault label.",
        "Role:\nYou review code.",
        "Sent as written.",
    ]


@pytest.mark.anyio
async def test_full_order_and_metadata() -> None:
    history = [user("earlier"), assistant_calls("call_1")]
    frozen = copy.deepcopy(history)

    class Loader:
        async def load(self, uri: str) -> dict[str, str]:
            return {"uri": uri, "text": f"text of {uri}"}

    messages = await create_default_input_builder().build(
        "Summarize",
        system_instructions=["Be accurate.", {"label": "Policy", "text": "No guessing."}],
        developer_instructions="Cite supplied context only.",
        summaries=["older stuff"],
        history=history,
        attachments=[
            {"uri": "mem://a"},
            {"name": "img", "content": [{"type": "image", "url": "u"}]},
        ],
        resource_uris=["package://demo/prompt.md"],
        resource_loader=Loader(),
        tool_results=[{"toolCallId": "call_1", "name": "lookup", "value": {"ok": True}}],
        metadata={"requestId": "r1"},
    )
    assert texts(messages) == [
        "system:System instruction:\nBe accurate.",
        "system:Policy:\nNo guessing.",
        "system:Developer instruction:\nCite supplied context only.",
        "system:Conversation summary:\nolder stuff",
        "user:earlier",
        "assistant:None",
        "tool:call_1",
        "user:Summarize",
        "user:Attachment mem://a:\ntext of mem://a",
        "user:None",
        "user:Resource package://demo/prompt.md:\ntext of package://demo/prompt.md",
    ]
    assert messages[7]["metadata"] == {"requestId": "r1"}
    assert messages[6]["content"] == [
        {"type": "tool_result", "toolCallId": "call_1", "name": "lookup", "result": {"ok": True}}
    ]
    assert history == frozen


@pytest.mark.anyio
async def test_message_inputs_are_preserved() -> None:
    message = user("as is")
    out = await create_default_input_builder().build([message, user("two")])
    assert out[0] is message and len(out) == 2
    merged = await create_default_input_builder().build(message, metadata={"k": 1})
    assert merged[0]["metadata"] == {"k": 1} and "metadata" not in message


@pytest.mark.anyio
async def test_system_prompt_layers_as_instructions() -> None:
    out = await create_default_input_builder().build(
        "hi",
        system_instructions=[SystemPromptLayer("run", "r"), SystemPromptLayer("app", "a")],
    )
    assert texts(out)[:2] == ["system:App system prompt:\na", "system:Run system prompt:\nr"]


def test_tool_results_follow_their_assistant_and_existing_results() -> None:
    messages = [
        user("q"),
        assistant_calls("a", "b"),
        {
            "role": "tool",
            "content": [{"type": "tool_result", "toolCallId": "a", "name": "x", "result": 1}],
        },
        user("next"),
    ]
    new = [
        {
            "role": "tool",
            "content": [{"type": "tool_result", "toolCallId": "b", "name": "x", "result": 2}],
        },
        {
            "role": "tool",
            "content": [{"type": "tool_result", "toolCallId": "zzz", "name": "x", "result": 3}],
        },
    ]
    placed = place_tool_results(messages, new)  # type: ignore[arg-type]
    assert texts(placed) == [
        "user:q",
        "assistant:None",
        "tool:a",
        "tool:b",
        "user:next",
        "tool:zzz",
    ]
    assert len(messages) == 4  # input list untouched


def test_compose_puts_context_and_skills_after_leading_system() -> None:
    groups = MessageGroups(
        instructions=[text_message("system", "I")],
        summaries=[text_message("system", "S")],
        history=[user("h")],
        input=[user("in")],
        context_blocks=[{"name": "proj", "text": "ctx"}],
        skills=[Skill("s", "do")],
    )
    assert texts(compose_messages(groups)) == [
        "system:I",
        "system:S",
        "system:Context proj:\nctx",
        "system:Skill s\ndo",
        "user:h",
        "user:in",
    ]


@pytest.mark.anyio
async def test_prompt_builder_matches_compose() -> None:
    base = [text_message("system", "I"), user("h")]
    out = await create_default_prompt_builder().build(
        base, context_blocks=[{"text": "ctx"}], skills=[Skill("s")]
    )
    assert texts(out) == ["system:I", "system:Context:\nctx", "system:Skill s", "user:h"]
    assert await create_default_prompt_builder().build(base) == base


@pytest.mark.anyio
async def test_input_assembly_middleware_runs_only_when_given() -> None:
    middleware = create_middleware_registry()
    middleware.use("input_assembly", lambda messages, next: next([*messages, user("added")]))
    out = await create_default_input_builder().build("hi", middleware=middleware)
    assert texts(out) == ["user:hi", "user:added"]
    bad = create_middleware_registry()
    bad.use("input_assembly", lambda messages, next: "nope")
    with pytest.raises(ConfigError, match="input_assembly middleware must return a list"):
        await create_default_input_builder().build("hi", middleware=bad)
    bad_message = create_middleware_registry()
    bad_message.use("input_assembly", lambda messages, next: [{"role": "robot", "content": []}])
    with pytest.raises(ConfigError, match="role must be one of"):
        await create_default_input_builder().build("hi", middleware=bad_message)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"input": 42}, ConfigError, "input must be a string"),
        ({"input": [{"role": "user"}]}, ConfigError, r"input\[0\]: message content must be a list"),
        ({"attachments": [{"name": "x"}]}, ConfigError, "exactly one of text, content or uri"),
        ({"attachments": [{"text": "a", "uri": "b"}]}, ConfigError, "exactly one"),
        ({"attachments": [{"text": 3}]}, ConfigError, r"attachments\[0\].text must be a string"),
        ({"attachments": [{"uri": "mem://x"}]}, ConfigError, "'mem://x' needs a resource_loader"),
        ({"resource_uris": [""]}, ConfigError, "non-empty strings"),
        ({"tool_results": [{"name": "x", "value": 1}]}, ConfigError, "string 'toolCallId'"),
        ({"system_instructions": [3]}, ConfigError, "instructions must be strings"),
        ({"summaries": [{"role": "system"}]}, ConfigError, r"summaries\[0\]"),
    ],
)
async def test_bad_builder_input(kwargs: Any, error: type[Exception], message: str) -> None:
    kwargs = {"input": "hi", **kwargs}
    with pytest.raises(error, match=message):
        await create_default_input_builder().build(**kwargs)


@pytest.mark.anyio
async def test_failing_loader_is_named_without_its_text() -> None:
    class Loader:
        def load(self, uri: str) -> str:
            raise OSError("disk says sk-secret-123")

    with pytest.raises(
        PrismError, match="resource loader failed for resource 'file://a'"
    ) as caught:
        await create_default_input_builder().build(
            "hi", resource_uris=["file://a"], resource_loader=Loader()
        )
    assert "sk-secret" not in str(caught.value)
    assert caught.value.code == "resource_load_failed"


class Named:
    def __init__(self, name: str, result: Any) -> None:
        self.name = name
        self.result = result
        self.requests: list[ContextRequest] = []

    def provide(self, request: ContextRequest) -> Any:
        self.requests.append(request)
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


@pytest.mark.anyio
async def test_context_providers_in_order_with_middleware() -> None:
    class AsyncProvider:
        name = "async"

        async def provide(self, request: ContextRequest) -> list[Any]:
            return [{"text": "b1", "tags": ["t"]}, "b2"]

    first = Named("first", "a")
    middleware = create_middleware_registry()
    middleware.use("context", lambda blocks, next: next([*blocks, {"name": "mw", "text": "m"}]))
    blocks = await resolve_context_providers(
        [first, AsyncProvider(), Named("none", None)],
        ContextRequest(session_id="s1"),
        middleware=middleware,
    )
    assert blocks == [
        {"name": "first", "text": "a"},
        {"name": "async", "text": "b1", "tags": ["t"]},
        {"name": "async", "text": "b2"},
        {"name": "mw", "text": "m"},
    ]
    assert first.requests[0].session_id == "s1"


@pytest.mark.anyio
async def test_context_provider_failures() -> None:
    with pytest.raises(PrismError, match="context provider 'db' failed: RuntimeError") as caught:
        await resolve_context_providers([Named("db", RuntimeError("token sk-abc"))])
    assert "sk-abc" not in str(caught.value)
    with pytest.raises(ConfigError, match="block without string 'text'"):
        await resolve_context_providers([Named("bad", {"name": "x"})])
    with pytest.raises(ConfigError, match="tags that are not strings"):
        await resolve_context_providers([Named("bad", {"text": "x", "tags": "t"})])
    with pytest.raises(ConfigError, match="provide"):
        await resolve_context_providers([object()])  # type: ignore[list-item]
    middleware = create_middleware_registry()
    middleware.use("context", lambda blocks, next: "nope")
    with pytest.raises(ConfigError, match="context middleware must return a list"):
        await resolve_context_providers([], middleware=middleware)
