"""``read`` on image files (issue 27, last part): PNG/JPEG/GIF/WebP found
by magic bytes come back as image content with a text line; corrupt headers
and oversize images are tool errors; an agent session with the mock
provider carries the image to the next request, through the JSONL, SQLite
and PostgreSQL stores (secrets set, so redaction runs), counted as one
image by the estimators, past the attention gate and compaction; a
text-only model gets a note in its place."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from coding_helpers import Call, error_of
from tests.image_samples import gif_header, jpeg_header, png_bytes, webp_header

from prism._native import IMAGE_TOKENS, estimate_message_tokens
from prism.coding import CodingLimits, create_coding_tools
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import create_agent
from prism.security import create_execution_policy, create_redactor
from prism.stores import create_jsonl_session_store, create_sqlite_session_store

pytestmark = pytest.mark.anyio
SECRET = "hunter2-secret-value"
PNG = png_bytes(3, 2)
PNG64 = base64.b64encode(PNG).decode()


@pytest.mark.parametrize(
    ("name", "data", "mime", "size"),
    [
        ("shot.bin", PNG, "image/png", "3x2"),  # magic bytes, not the extension
        ("photo.jpg", jpeg_header(640, 480), "image/jpeg", "640x480"),
        ("anim.gif", gif_header(10, 7), "image/gif", "10x7"),
        ("pic.webp", webp_header(300, 200), "image/webp", "300x200"),
    ],
)
async def test_read_returns_the_image_and_a_line_about_it(
    workspace: Path, call: Call, name: str, data: bytes, mime: str, size: str
) -> None:
    (workspace / name).write_bytes(data)
    result = await call("read", path=name)
    assert not result.get("isError"), result
    assert result["value"] == f"{name}: {mime}, {len(data)} bytes, {size} pixels (image attached)"
    assert result["images"] == [
        {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime}
    ]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (PNG[:20], "PNG header (IHDR chunk) is missing or truncated"),
        (jpeg_header()[:24], "JPEG header is truncated"),
        (
            b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 9 + b"\xff\xda\x00\x02",
            "no frame header",
        ),
        (gif_header()[:8], "GIF header is truncated"),
        (b"RIFF\x10\x00\x00\x00WEBPJUNK", "WebP header"),
        (png_bytes(0, 2), "empty size (0x2)"),
    ],
)
async def test_corrupt_image_headers_are_tool_errors(
    workspace: Path, call: Call, data: bytes, why: str
) -> None:
    (workspace / "bad.img").write_bytes(data)
    message = error_of(await call("read", path="bad.img"))
    assert "'bad.img' looks like image/" in message and why in message


async def test_an_oversize_image_is_a_tool_error(workspace: Path, call: Call) -> None:
    big = png_bytes(3, 2, padding=CodingLimits().read_max_image_bytes)
    (workspace / "big.png").write_bytes(big)
    message = error_of(await call("read", path="big.png"))
    assert "is an image (image/png, 3.6 MiB), over the 3.6 MiB cap" in message


async def test_other_binaries_keep_the_refusal(workspace: Path, call: Call) -> None:
    (workspace / "a.out").write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 64)
    assert "looks binary" in error_of(await call("read", path="a.out"))


def reading_provider() -> Any:
    """Turn 1 reads the picture; later turns answer with what they saw."""

    def script(request: Any) -> list[Any]:
        if request["messages"][-1]["role"] == "tool":
            return [provider_text_delta("a red square"), provider_done()]
        if any(m["role"] == "tool" for m in request["messages"]):
            return [provider_text_delta("still red"), provider_done()]
        return [provider_tool_call("c1", "read", {"path": "pic.png"}), provider_done("tool_use")]

    return create_mock_provider(script, record=True)


def agent_for(workspace: Path, provider: Any, *, model: dict[str, Any], **options: Any) -> Any:
    redactor = create_redactor([SECRET])
    policy = create_execution_policy([workspace], [], redactor=redactor)
    return create_agent(
        model=model,
        provider=provider,
        tools=create_coding_tools(workspace, execution_policy=policy, redactor=redactor),
        secrets=[SECRET],
        **options,
    )


def tool_message(request: Any) -> dict[str, Any]:
    return next(m for m in request["messages"] if m["role"] == "tool")


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
async def test_the_next_request_carries_the_image_through_every_store(
    workspace: Path, tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    (workspace / "pic.png").write_bytes(PNG)

    def open_store() -> Any:
        if kind == "jsonl":
            return create_jsonl_session_store(tmp_path / "s.jsonl")
        if kind == "sqlite":
            return create_sqlite_session_store(tmp_path / "s.db")
        from prism.stores.postgres import create_postgres_session_store

        return create_postgres_session_store(request.getfixturevalue("pg_dsn"))

    model = {"provider": "mock", "model": "m"}
    provider = reading_provider()
    store = open_store()
    session = agent_for(workspace, provider, model=model, store=store).create_session("s")
    await session.run("what is in pic.png?")
    image = {"type": "image", "data": PNG64, "mimeType": "image/png"}
    assert tool_message(provider.requests[1])["content"][1] == image
    if hasattr(store, "aclose"):
        await store.aclose()

    # A fresh process's view: reopen the store, resume, ask again.
    store = open_store()
    stored = [e for e in await store.list("s") if e["message"]["role"] == "tool"]
    assert stored[0]["message"]["content"][1] == image
    again = reading_provider()
    resumed = await agent_for(workspace, again, model=model, store=store).open_session("s")
    await resumed.run("and now?")
    assert tool_message(again.requests[0])["content"][1] == image
    if hasattr(store, "aclose"):
        await store.aclose()


async def test_estimates_count_an_image_not_its_base64(workspace: Path) -> None:
    big = png_bytes(3, 2, padding=600_000)
    (workspace / "pic.png").write_bytes(big)
    provider = reading_provider()
    session = agent_for(workspace, provider, model={"provider": "mock", "model": "m"})
    await session.create_session("s").run("look")
    message = tool_message(provider.requests[1])
    tokens = estimate_message_tokens(message)
    assert IMAGE_TOKENS <= tokens < IMAGE_TOKENS + 100  # base64/4 would be ~200k


async def test_attention_gate_and_compaction_take_image_rows(workspace: Path) -> None:
    (workspace / "pic.png").write_bytes(PNG)
    (workspace / "notes.txt").write_text(("n" * 80 + "\n") * 100)  # ~2.3k tokens a read
    calls = iter(["pic.png", "notes.txt", "notes.txt", "notes.txt"])

    def script(request: Any) -> list[Any]:
        if request["messages"][-1]["role"] == "tool":
            return [provider_text_delta("seen"), provider_done()]
        path = next(calls)
        return [provider_tool_call(f"c-{path}-{len(request['messages'])}", "read", {"path": path})]

    provider = create_mock_provider(script, record=True)
    agent = agent_for(
        workspace,
        provider,
        model={"provider": "mock", "model": "m"},
        attention_compiler={"maxInputTokens": 8000, "keepLast": 1},
    )
    session = agent.create_session("s")
    compiled: list[dict[str, Any]] = []
    session.subscribe(lambda e: compiled.append(e) if e["type"] == "attention_compiled" else None)
    for n in range(4):
        await session.run(f"read {n}")
    assert compiled and compiled[-1]["stubbedToolResults"] >= 1
    assert PNG64 not in json.dumps(compiled)
    # A stub replaces the tool_result block only; the image block after it
    # stays at its fixed estimate (docs/tools.md).
    assert PNG64 in json.dumps(provider.requests[-1]["messages"])
    entry = await session.compact()
    assert entry["kind"] == "compaction" and PNG64 not in entry["summary"]


async def test_a_text_only_model_gets_a_note_and_the_mock_records_it(workspace: Path) -> None:
    (workspace / "pic.png").write_bytes(PNG)
    provider = reading_provider()
    model = {"provider": "mock", "model": "text-model", "input": ["text"]}
    session = agent_for(workspace, provider, model=model).create_session("s")
    await session.run("look")
    content = tool_message(provider.requests[1])["content"]
    assert content[1] == {
        "type": "text",
        "text": (
            f"[image omitted (image/png, {len(PNG)} bytes): model 'text-model' does not accept "
            "image input]"
        ),
    }
    stored = [e for e in await session.entries() if e["message"]["role"] == "tool"]
    assert stored[0]["message"]["content"][1]["data"] == PNG64  # the history keeps it
