"""``prism inspect`` as a user runs it (a child process) and what its HTTP
server refuses, through real HTTP (httpx)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.inspect.browser import InspectorProcess, inspector
from tests.inspect.conftest import DemoFile

from prism.inspect import InspectError, check_bind_host


@pytest.fixture(scope="module")
def server(demo: DemoFile) -> Iterator[InspectorProcess]:
    with inspector(str(demo.path)) as running:
        yield running


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prism", "inspect", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_the_url_names_loopback_a_random_port_and_a_token(server: InspectorProcess) -> None:
    assert server.base.startswith("http://127.0.0.1:")
    assert len(server.token) >= 32
    response = httpx.get(f"{server.base}/api/sessions", params={"token": server.token})
    assert response.status_code == 200
    assert [s["id"] for s in response.json()["sessions"]] == ["trip-planning", "plain"]


@pytest.mark.parametrize("path", ["/", "/static/app.js", "/api/sessions", "/api/tail"])
def test_no_token_or_a_wrong_one_gets_nothing(server: InspectorProcess, path: str) -> None:
    for params in ({}, {"token": "guessed"}, {"token": server.token[:-1]}):
        response = httpx.get(f"{server.base}{path}", params={**params, "id": "plain"})
        assert response.status_code == 401
        assert response.json() == {"error": "missing or wrong access token"}


def test_a_foreign_host_or_origin_is_refused(server: InspectorProcess) -> None:
    params = {"token": server.token}
    rebound = httpx.get(
        f"{server.base}/api/sessions", params=params, headers={"Host": "evil.example:80"}
    )
    assert rebound.status_code == 403
    assert "Host header" in rebound.json()["error"]
    port = server.base.rsplit(":", 1)[1]
    same_port = httpx.get(
        f"{server.base}/api/sessions", params=params, headers={"Host": f"evil.example:{port}"}
    )
    assert same_port.status_code == 403
    cross = httpx.get(
        f"{server.base}/api/sessions", params=params, headers={"Origin": "http://evil.example"}
    )
    assert cross.status_code == 403 and "origin" in cross.json()["error"]
    own = httpx.get(f"{server.base}/api/sessions", params=params, headers={"Origin": server.base})
    assert own.status_code == 200
    local = httpx.get(
        f"{server.base}/api/sessions", params=params, headers={"Host": f"localhost:{port}"}
    )
    assert local.status_code == 200


def test_it_is_read_only(server: InspectorProcess, demo: DemoFile) -> None:
    before = demo.path.read_bytes()
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        response = httpx.request(
            method, f"{server.base}/api/sessions", params={"token": server.token}
        )
        assert response.status_code == 405
    assert demo.path.read_bytes() == before


def test_pages_carry_a_strict_content_security_policy(server: InspectorProcess) -> None:
    response = httpx.get(f"{server.base}/", params={"token": server.token})
    assert response.status_code == 200
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert response.headers["referrer-policy"] == "no-referrer"
    assert "__TOKEN__" not in response.text and server.token in response.text


def test_an_unknown_session_is_a_clear_error(server: InspectorProcess) -> None:
    response = httpx.get(
        f"{server.base}/api/messages", params={"token": server.token, "id": "nope"}
    )
    assert response.status_code == 502
    assert "no session 'nope'" in response.json()["error"]


def test_a_non_loopback_bind_needs_the_flag_and_warns() -> None:
    check_bind_host("127.0.0.1", allow_remote=False)
    check_bind_host("::1", allow_remote=False)
    with pytest.raises(InspectError, match="--allow-remote-bind"):
        check_bind_host("0.0.0.0", allow_remote=False)
    with pytest.warns(UserWarning, match="reachable from other machines"):
        check_bind_host("0.0.0.0", allow_remote=True)


def test_cli_refuses_a_public_address(demo: DemoFile) -> None:
    done = run_cli(str(demo.path), "--host", "0.0.0.0")
    assert done.returncode == 1
    assert "refusing to bind 0.0.0.0" in done.stderr and done.stdout == ""


def test_cli_bad_input_is_one_clear_line(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a session\n")
    done = run_cli(str(notes))
    assert done.returncode == 1
    assert done.stderr.startswith("prism: error: ") and "is not a session file" in done.stderr
    assert run_cli().returncode == 2
    assert "give one session file" in run_cli().stderr
    missing = run_cli(str(tmp_path / "none.jsonl"))
    assert missing.returncode == 1 and "No such file" in missing.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_export_writes_one_self_contained_redacted_file(demo: DemoFile, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    done = run_cli(
        str(demo.path),
        "--session",
        "trip-planning",
        "--export",
        str(report),
        "--secret-env",
        "INSPECT_TEST_SECRET",
        env={"INSPECT_TEST_SECRET": "Alfama Inn"},
    )
    assert done.returncode == 0, done.stderr
    html = report.read_text()
    assert "sk-demo-secret" not in html  # redacted by the agent before it was stored
    assert "Alfama Inn" not in html and "[REDACTED]" in html  # masked by --secret-env
    assert "<script src=" not in html and '<link rel="stylesheet"' not in html
    assert "http://" not in html.replace('"http://', "").split("prism-data")[0]
    payload = html.split('id="prism-data">', 1)[1].split("</script>", 1)[0]
    data = json.loads(payload)
    assert data["session"]["summary"]["id"] == "trip-planning"


def test_export_escapes_markup_inside_the_data(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    entry = {
        "id": "e1",
        "sessionId": "s",
        "parentId": None,
        "kind": "message",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": "</script><script>alert(1)</script>"}],
        },
    }
    session.write_text(json.dumps(entry) + "\n")
    report = tmp_path / "r.html"
    assert run_cli(str(session), "--export", str(report)).returncode == 0
    html = report.read_text()
    assert "<script>alert(1)" not in html
    assert html.count("</script>") == 2  # the data block's and the page script's own


def test_export_to_an_unwritable_place_writes_nothing(demo: DemoFile, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = run_cli(str(demo.path), "--export", str(blocker / "report.html"))
    assert done.returncode == 1 and "cannot write" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


WRITER = textwrap.dedent(
    """
    import sys, anyio
    from prism.stores import create_jsonl_session_store

    async def main(path, parent, count):
        store = create_jsonl_session_store(path)
        for n in range(count):
            batch = []
            for k in range(3):
                entry_id = f"tail-{n}-{k}"
                batch.append({"id": entry_id, "sessionId": "plain", "parentId": parent,
                              "kind": "custom", "customType": "test.tick", "data": {"n": n, "k": k}})
                parent = entry_id
            await store.append_many(batch)

    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
    """
)


def test_the_tail_sees_every_entry_of_a_session_written_while_read(
    demo: DemoFile, tmp_path: Path
) -> None:
    live = tmp_path / "live.jsonl"
    live.write_bytes(demo.path.read_bytes())
    with inspector(str(live), "--session", "plain", "--follow") as running:
        assert running.url.endswith("#session=plain&follow=1")
        params = {"token": running.token, "id": "plain"}
        last = httpx.get(f"{running.base}/api/session", params=params).json()["summary"][
            "lastEntryId"
        ]
        received: list[str] = []
        with httpx.stream(
            "GET", f"{running.base}/api/tail", params={**params, "after": last}, timeout=60
        ) as stream:
            lines = stream.iter_lines()
            assert next(lines) == ": connected"
            writer = subprocess.Popen([sys.executable, "-c", WRITER, str(live), last, "40"])
            try:
                for line in lines:
                    if line.startswith("data: "):
                        received.append(json.loads(line[6:])["id"])
                        if len(received) == 120:
                            break
            finally:
                writer.wait(timeout=60)
    assert received == [f"tail-{n}-{k}" for n in range(40) for k in range(3)]


def test_a_silent_or_garbled_connection_does_not_hold_the_server(server: InspectorProcess) -> None:
    import socket as sockets

    host, port = server.base.removeprefix("http://").rsplit(":", 1)
    with sockets.create_connection((host, int(port)), timeout=30) as garbled:
        garbled.sendall(b"\x00\x01 not http\r\n\r\n")
        answer = garbled.recv(4096)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400")
    with sockets.create_connection((host, int(port)), timeout=30) as silent:
        # Another client is served while this one says nothing.
        response = httpx.get(f"{server.base}/api/info", params={"token": server.token})
        assert response.status_code == 200
        # Answered 400 and closed once the server's read timeout runs out.
        # The head and body may arrive in separate reads; the close is the
        # empty read that ends them.
        answer = b""
        while chunk := silent.recv(4096):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 400") and b"connection: close" in answer


def test_ctrl_c_stops_the_server_cleanly(demo: DemoFile) -> None:
    import signal

    running = InspectorProcess(str(demo.path))
    try:
        running.process.send_signal(signal.SIGINT)
        out, err = running.process.communicate(timeout=30)
    finally:
        running.close()
    assert running.process.returncode == 0, err
    assert out.strip().endswith("prism inspect: stopped")
