"""One logger per layer under ``prism``: silent by default, redacted always,
and ``prism --verbose`` turns them on to stderr."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from prism import create_agent
from prism.log import disable_logging, enable_logging
from prism.providers import create_mock_provider, provider_done, provider_error, provider_text_delta
from prism.providers.openai_compatible import create_openai_compatible_provider
from prism.security.redaction import NOOP_REDACTOR, create_redactor
from prism.stores import create_jsonl_session_store

pytestmark = pytest.mark.anyio

AGENT_SECRET = "agent-secret-4c1e9d7a2b"
API_KEY = "sk-log-canary-9f2e7b3c1a5d"
MODEL = {"provider": "mock", "model": "demo"}


def messages(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name]


def test_nothing_is_printed_by_default() -> None:
    """Without the library root's NullHandler, logging's last-resort handler
    would print this warning on stderr."""
    code = (
        "import logging, prism\n"
        "logging.getLogger('prism.runtime').warning('should not be seen')\n"
        "logging.getLogger('prism.stores').error('nor this')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr == ""


async def test_runtime_records_tell_the_run_and_hold_no_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def no_sleep(_: float) -> None:
        return None

    script = [
        [provider_error(f"busy for {AGENT_SECRET}", "503")],
        [provider_text_delta(f"you said {AGENT_SECRET}"), provider_done()],
    ]
    agent = create_agent(
        model=MODEL, provider=create_mock_provider(script), secrets=[AGENT_SECRET], sleep=no_sleep
    )
    caplog.set_level(logging.DEBUG, logger="prism")
    result = await agent.create_session().run(f"my key is {AGENT_SECRET}")
    assert result.text == "you said [REDACTED]"
    runtime = [r for r in caplog.records if r.name == "prism.runtime"]
    kinds = [r.getMessage().split(" ", 1)[0] for r in runtime]
    assert kinds[0] == "run_started" and "run_finished" in kinds
    retry = [r for r in runtime if r.getMessage().startswith("retry_scheduled")]
    assert retry and retry[0].levelno == logging.INFO
    assert "message_delta" not in kinds
    for record in caplog.records:
        assert AGENT_SECRET not in record.getMessage()


def _sse(*chunks: dict[str, Any]) -> bytes:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return body.encode()


async def test_provider_records_show_the_request_and_response_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = _sse(
            {"choices": [{"index": 0, "delta": {"content": f"echo {API_KEY}"}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        )
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    provider = create_openai_compatible_provider(
        base_url="http://127.0.0.1:9/v1",
        api_key=API_KEY,
        http_client=client,
        name="local",
        redactor=NOOP_REDACTOR,  # the adapter still masks the key it sends
    )
    caplog.set_level(logging.DEBUG, logger="prism")
    request: Any = {
        "model": {"provider": "local", "model": "m"},
        "messages": [{"role": "user", "content": [{"type": "text", "text": f"k={API_KEY}"}]}],
    }
    events = [event async for event in provider.generate(request)]
    await client.aclose()
    assert events[-1]["type"] == "done"
    assert seen[0].headers["authorization"] == f"Bearer {API_KEY}"  # it was sent
    records = messages(caplog, "prism.providers")
    sent = [m for m in records if "POST http://127.0.0.1:9/v1/chat/completions" in m]
    assert sent and '"Authorization": "<redacted>"' in sent[0] and '"model":"m"' in sent[0]
    assert any("response 200 text/event-stream" in m for m in records)
    assert any(m.startswith("local: data ") and "echo" in m for m in records)
    for record in caplog.records:
        assert API_KEY not in record.getMessage()


async def test_store_records_name_a_quarantined_line_without_its_text(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"broken": "' + AGENT_SECRET + '"\n')
    caplog.set_level(logging.DEBUG, logger="prism")
    store = create_jsonl_session_store(path)
    await store.list("s")
    warnings = [r for r in caplog.records if r.name == "prism.stores"]
    assert warnings and warnings[0].levelno == logging.WARNING
    assert "line 1 quarantined" in warnings[0].getMessage()
    assert AGENT_SECRET not in warnings[0].getMessage()


def test_enable_logging_masks_a_secret_the_layer_did_not_know() -> None:
    stream = io.StringIO()
    handler = enable_logging(stream=stream, redactor=create_redactor([AGENT_SECRET]))
    try:
        logging.getLogger("prism.providers").debug("body %s", {"text": AGENT_SECRET})
        try:
            raise ValueError(AGENT_SECRET)
        except ValueError:
            logging.getLogger("prism.runtime").exception("failed")
    finally:
        disable_logging(handler)
    out = stream.getvalue()
    assert "prism.providers DEBUG body" in out and "failed (ValueError)" in out
    assert AGENT_SECRET not in out
    logging.getLogger("prism.providers").debug("after %s", "disable")
    assert "after" not in stream.getvalue()


def test_prism_verbose_logs_to_stderr_and_keeps_stdout_clean(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "prism"
    done = subprocess.run(
        [str(exe), "-v", "-p", "hello"],
        capture_output=True,
        text=True,
        env={**os.environ, "PRISM_HOME": str(tmp_path)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "prism.runtime DEBUG run_started" in done.stderr
    assert "prism.runtime DEBUG run_finished" in done.stderr
    assert "prism.runtime" not in done.stdout and done.stdout.strip()
