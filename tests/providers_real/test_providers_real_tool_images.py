"""Images in tool results on the wire, through each adapter with
httpx.MockTransport: Anthropic puts them in the tool_result's content,
Chat Completions and Responses in one user message after the run of tool
outputs; a model whose metadata says ``input: ["text"]`` gets a text note in
their place and no base64 at all."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from anthropic_support import events_body, make_anthropic, text_stream
from providers_real_support import (
    CANARY_KEY,
    Recorder,
    chunk,
    make_provider,
    sse_lines,
    sse_response,
)
from tests.image_samples import png_bytes

from prism.providers.openai_responses import create_openai_responses_provider
from prism.security import NOOP_REDACTOR

pytestmark = pytest.mark.anyio
PNG64 = base64.b64encode(png_bytes(3, 2)).decode()
DATA_URL = f"data:image/png;base64,{PNG64}"
NOTE = "[image omitted (image/png, "


def conversation() -> list[dict[str, Any]]:
    """Two parallel calls; the first returned an image."""
    return [
        {"role": "user", "content": [{"type": "text", "text": "look"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "p.png"}},
                {"type": "tool_call", "id": "c2", "name": "list", "arguments": {}},
            ],
        },
        {
            "role": "tool",
            "content": [
                {"type": "tool_result", "toolCallId": "c1", "name": "read", "result": "p.png: 3x2"},
                {"type": "image", "data": PNG64, "mimeType": "image/png"},
            ],
        },
        {
            "role": "tool",
            "content": [
                {"type": "tool_result", "toolCallId": "c2", "name": "list", "result": "ok"}
            ],
        },
    ]


def model(provider: str, name: str, images: bool) -> dict[str, Any]:
    config: dict[str, Any] = {"provider": provider, "model": name}
    if not images:
        config["input"] = ["text"]
    return config


async def send(provider: Any, request: dict[str, Any]) -> None:
    events = [event async for event in provider.generate(request)]
    assert events[-1]["type"] == "done", events


def anthropic_recorder() -> Recorder:
    return Recorder(lambda: sse_response(events_body(text_stream("ok"))))


async def test_anthropic_sends_image_blocks_inside_the_tool_result() -> None:
    recorder = anthropic_recorder()
    request = {"model": model("anthropic", "claude-sonnet-4-5", True), "messages": conversation()}
    await send(make_anthropic(recorder), request)
    turn = recorder.bodies[0]["messages"][-1]
    assert turn["role"] == "user"
    first, second = turn["content"]
    assert first["tool_use_id"] == "c1"
    assert first["content"] == [
        {"type": "text", "text": "p.png: 3x2"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
    ]
    assert (second["tool_use_id"], second["content"]) == ("c2", "ok")


async def test_anthropic_text_only_model_gets_a_note() -> None:
    recorder = anthropic_recorder()
    request = {"model": model("anthropic", "old-text-model", False), "messages": conversation()}
    await send(make_anthropic(recorder), request)
    first = recorder.bodies[0]["messages"][-1]["content"][0]
    assert first["content"][0] == {"type": "text", "text": "p.png: 3x2"}
    assert first["content"][1]["text"].startswith(NOTE)
    assert "'old-text-model' does not accept image input" in first["content"][1]["text"]
    assert PNG64 not in json.dumps(recorder.bodies[0])


def chat_recorder() -> Recorder:
    return Recorder(lambda: sse_response(sse_lines([chunk(content="ok", finish="stop")])))


async def test_chat_completions_sends_images_in_a_user_message_after_the_tool_messages() -> None:
    recorder = chat_recorder()
    request = {"model": model("openai-compatible", "demo", True), "messages": conversation()}
    await send(make_provider(recorder), request)
    messages = recorder.bodies[0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user"]
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "p.png: 3x2"}
    lead, image = messages[4]["content"]
    assert lead == {"type": "text", "text": "The image returned by tool 'read' (call c1):"}
    assert image == {"type": "image_url", "image_url": {"url": DATA_URL}}


async def test_chat_completions_text_only_model_gets_a_note_in_the_tool_message() -> None:
    recorder = chat_recorder()
    request = {"model": model("openai-compatible", "demo", False), "messages": conversation()}
    await send(make_provider(recorder), request)
    messages = recorder.bodies[0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert messages[2]["content"].startswith("p.png: 3x2\n\n" + NOTE)
    assert PNG64 not in json.dumps(recorder.bodies[0])


def responses_recorder() -> Recorder:
    events = [
        {"type": "response.output_text.delta", "output_index": 0, "delta": "ok"},
        {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    return Recorder(lambda: sse_response(body))


def responses_provider(recorder: Recorder) -> Any:
    return create_openai_responses_provider(
        base_url="https://oai.example.invalid/v1",
        api_key=CANARY_KEY,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(recorder)),
        redactor=NOOP_REDACTOR,
    )


async def test_responses_sends_input_image_in_a_message_after_the_outputs() -> None:
    recorder = responses_recorder()
    request = {"model": model("openai-responses", "gpt-5", True), "messages": conversation()}
    await send(responses_provider(recorder), request)
    items = recorder.bodies[0]["input"]
    assert [i["type"] for i in items] == [
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "message",
    ]
    assert items[3] == {"type": "function_call_output", "call_id": "c1", "output": "p.png: 3x2"}
    assert items[5]["role"] == "user"
    assert items[5]["content"][1] == {"type": "input_image", "image_url": DATA_URL}


async def test_responses_text_only_model_gets_a_note_in_the_output() -> None:
    recorder = responses_recorder()
    request = {"model": model("openai-responses", "gpt-5", False), "messages": conversation()}
    await send(responses_provider(recorder), request)
    items = recorder.bodies[0]["input"]
    assert items[3]["output"].startswith("p.png: 3x2\n\n" + NOTE)
    assert items[-1]["type"] == "function_call_output"
    assert PNG64 not in json.dumps(recorder.bodies[0])


@pytest.mark.parametrize("adapter", ["anthropic", "chat", "responses"])
async def test_an_image_before_any_tool_result_is_refused_by_name(adapter: str) -> None:
    messages = conversation()
    messages[2]["content"].reverse()
    recorder = {"anthropic": anthropic_recorder, "chat": chat_recorder}.get(
        adapter, responses_recorder
    )()
    provider = {"anthropic": make_anthropic, "chat": make_provider}.get(
        adapter, responses_provider
    )(recorder)
    request = {"model": model("x", "m", True), "messages": messages}
    events = [event async for event in provider.generate(request)]
    assert events[-1]["type"] == "error"
    assert (
        "cannot send a 'image' block in messages[2] (role tool)" in events[-1]["error"]["message"]
    )
    assert not recorder.bodies
