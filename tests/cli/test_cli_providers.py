"""``prism providers add|list`` and reaching a real OpenAI-compatible server
(``--base-url``, ``--api-key-env``, ``OPENAI_BASE_URL``, a configured entry)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

KEY = "sk-test-canary-0123456789"


@pytest.fixture
def config_env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    cli_env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    cli_env.pop("OPENAI_BASE_URL", None)
    return cli_env


def config_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "prism" / "config.json"


def test_add_writes_the_variable_name_never_a_key(
    prism_run: Any, config_env: dict[str, str]
) -> None:
    config_env["LOCAL_KEY"] = KEY
    done = prism_run(
        "providers",
        "add",
        "openai",
        "--api-key-env",
        "LOCAL_KEY",
        "--base-url",
        "http://127.0.0.1:9/v1/",
        "--model",
        "local-model",
    )
    assert done.returncode == 0, done.stderr
    assert b"currently set" in done.stdout
    data = json.loads(config_file(config_env).read_text())
    assert data == {
        "providers": {
            "openai": {
                "preset": "openai",
                "apiKeyEnv": "LOCAL_KEY",
                "baseUrl": "http://127.0.0.1:9/v1",
                "model": "local-model",
            }
        }
    }
    assert KEY not in config_file(config_env).read_text()
    listed = prism_run("providers", "list")
    assert listed.returncode == 0
    assert listed.stdout.decode() == (
        "openai: key $LOCAL_KEY set, model local-model, base URL http://127.0.0.1:9/v1\n"
    )
    del config_env["LOCAL_KEY"]
    assert b"key $LOCAL_KEY missing" in prism_run("providers", "list").stdout


def test_add_defaults_to_the_presets_variable_and_keeps_other_keys(
    prism_run: Any,
    config_env: dict[str, str],
) -> None:
    path = config_file(config_env)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"theme": "dark", "providers": {"zai": {"preset": "zai"}}}))
    done = prism_run("providers", "add", "neuralwatt")
    assert done.returncode == 0, done.stderr
    data = json.loads(path.read_text())
    assert data["theme"] == "dark"
    assert data["providers"]["zai"] == {"preset": "zai"}
    assert data["providers"]["neuralwatt"] == {
        "preset": "neuralwatt",
        "apiKeyEnv": "NEURALWATT_API_KEY",
    }


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["add", "acme"], "unknown preset 'acme'"),
        (["add", "openai", "--api-key-env", KEY], "name of an environment variable"),
        (["add", "openai", "--base-url", "ftp://x"], "http(s) URL"),
        (["add", "openai", "--base-url", f"https://u:{KEY}@h/v1"], "credentials"),
        (["add", "openai", "--base-url", f"https://h/v1?key={KEY}"], "query"),
        (["add", "openai", "--model", " "], "--model must not be empty"),
        (["remove", "openai"], "providers:"),
        ([], "providers:"),
    ],
)
def test_bad_input_is_refused_and_writes_nothing(
    prism_run: Any, config_env: dict[str, str], args: list[str], fragment: str
) -> None:
    done = prism_run("providers", *args)
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.count("\n") == 1 and fragment in err, err
    assert KEY not in err
    assert not config_file(config_env).exists()


def test_a_corrupt_config_is_refused_not_overwritten(
    prism_run: Any, config_env: dict[str, str]
) -> None:
    path = config_file(config_env)
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"providers": ')
    done = prism_run("providers", "add", "openai")
    assert done.returncode == 2 and str(path) in done.stderr.decode()
    assert path.read_bytes() == b'{"providers": '


# --- a real server on loopback ----------------------------------------------------


class ChatServer:
    """A minimal OpenAI-compatible streaming endpoint that records requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length))
                server.requests.append(
                    {"path": self.path, "auth": self.headers.get("authorization"), "body": body}
                )
                chunks = [
                    {"choices": [{"index": 0, "delta": {"content": "hello from loopback"}}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                ]
                payload = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                data = payload.encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


def test_base_url_and_api_key_env_flags_reach_the_server(
    prism_run: Any, config_env: dict[str, str], chat_server: ChatServer
) -> None:
    config_env["MY_LOCAL_KEY"] = KEY
    done = prism_run(
        "--provider",
        "openai",
        "--base-url",
        chat_server.url,
        "--api-key-env",
        "MY_LOCAL_KEY",
        "--model",
        "local",
        "-p",
        "hi",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"hello from loopback"
    (request,) = chat_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == f"Bearer {KEY}"
    assert request["body"]["model"] == "local"


def test_openai_base_url_env_and_a_configured_entry(
    prism_run: Any, config_env: dict[str, str], chat_server: ChatServer
) -> None:
    config_env["OPENAI_API_KEY"] = KEY
    config_env["OPENAI_BASE_URL"] = chat_server.url
    assert prism_run("--provider", "openai", "-p", "hi").stdout == (b"hello from loopback")
    del config_env["OPENAI_BASE_URL"]
    config_env["ENTRY_KEY"] = "sk-entry-key-0123456789"
    added = prism_run(
        "providers",
        "add",
        "zai",
        "--api-key-env",
        "ENTRY_KEY",
        "--base-url",
        chat_server.url,
        "--model",
        "glm-local",
    )
    assert added.returncode == 0, added.stderr
    done = prism_run("--provider", "zai", "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert chat_server.requests[-1]["auth"] == "Bearer sk-entry-key-0123456789"
    assert chat_server.requests[-1]["body"]["model"] == "glm-local"


def test_flags_that_need_a_real_provider(prism_run: Any, config_env: dict[str, str]) -> None:
    done = prism_run("--base-url", "http://127.0.0.1:9/v1", "-p", "hi")
    assert done.returncode == 2 and b"not mock" in done.stderr
