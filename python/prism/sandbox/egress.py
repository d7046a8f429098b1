"""Egress by allow-list, enforced by a proxy the host runs.

A sandbox has no network of its own. Its only route out is a Unix socket
bound into it, where this proxy answers HTTP ``CONNECT`` (protocol
``https``: an opaque tunnel) and absolute-URI plain HTTP requests (protocol
``http``). Exactly the configured host/port/protocol rules pass; everything
else gets a 403. Every decision is an event carrying the policy's SHA-256
fingerprint.

The proxy runs in host threads (one per connection), so it needs no event
loop of the sandbox's owner; ``on_event`` is therefore called from those
threads and must be quick and thread-safe (appending to a list is).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import socketserver
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from prism.sandbox.contract import ERR_EGRESS_POLICY, SandboxError

EgressProtocol = Literal["http", "https"]
EventSink = Callable[[dict[str, Any]], None]
_MAX_HEAD = 64 * 1024
_CONNECT_TIMEOUT = 10.0

EGRESS_PRESETS: Mapping[str, tuple[tuple[str, int, EgressProtocol], ...]] = {
    "pypi": (("pypi.org", 443, "https"), ("files.pythonhosted.org", 443, "https")),
    "github": (
        ("github.com", 443, "https"),
        ("codeload.github.com", 443, "https"),
        ("objects.githubusercontent.com", 443, "https"),
    ),
    "npm-registry": (("registry.npmjs.org", 443, "https"),),
    "crates-io": (
        ("index.crates.io", 443, "https"),
        ("static.crates.io", 443, "https"),
    ),
}
"""Named rule sets, as data: hosts exactly as they must be asked for."""


@dataclass(frozen=True, slots=True, order=True)
class EgressRule:
    host: str
    port: int
    protocol: EgressProtocol

    def __post_init__(self) -> None:
        host = self.host
        if not isinstance(host, str) or not host or host != host.strip().lower() or "*" in host:
            raise SandboxError(
                f"egress rule host must be an exact lower-case name or address, got {host!r}",
                code=ERR_EGRESS_POLICY,
            )
        if (
            isinstance(self.port, bool)
            or not isinstance(self.port, int)
            or not 0 < self.port < 65536
        ):
            raise SandboxError(
                f"egress rule port must be 1-65535, got {self.port!r}", code=ERR_EGRESS_POLICY
            )
        if self.protocol not in ("http", "https"):
            raise SandboxError(
                f"egress rule protocol must be http or https, got {self.protocol!r}",
                code=ERR_EGRESS_POLICY,
            )


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """A deny-all allow-list; ``fingerprint`` is SHA-256 over the sorted rules."""

    rules: tuple[EgressRule, ...]
    fingerprint: str = field(init=False)

    def __post_init__(self) -> None:
        canonical = json.dumps([[r.host, r.port, r.protocol] for r in sorted(set(self.rules))])
        object.__setattr__(self, "fingerprint", hashlib.sha256(canonical.encode()).hexdigest())

    def allows(self, host: str, port: int, protocol: str) -> bool:
        return any(
            r.host == host.lower() and r.port == port and r.protocol == protocol for r in self.rules
        )


def create_egress_policy(
    rules: Iterable[EgressRule | Mapping[str, Any]] = (), *, presets: Iterable[str] = ()
) -> EgressPolicy:
    """Rules as ``EgressRule`` or ``{"host", "port", "protocol"}`` dicts, plus
    named presets from :data:`EGRESS_PRESETS`. No rules at all denies everything."""
    collected: list[EgressRule] = []
    for name in presets:
        if name not in EGRESS_PRESETS:
            raise SandboxError(
                f"unknown egress preset {name!r} (known: {', '.join(sorted(EGRESS_PRESETS))})",
                code=ERR_EGRESS_POLICY,
            )
        collected += [EgressRule(h, p, proto) for h, p, proto in EGRESS_PRESETS[name]]
    for rule in rules:
        if isinstance(rule, EgressRule):
            collected.append(rule)
        elif isinstance(rule, Mapping) and set(rule) == {"host", "port", "protocol"}:
            collected.append(EgressRule(rule["host"], rule["port"], rule["protocol"]))
        else:
            raise SandboxError(
                f"an egress rule needs exactly host, port and protocol, got {rule!r}",
                code=ERR_EGRESS_POLICY,
            )
    return EgressPolicy(tuple(sorted(set(collected))))


def proxy_env(port: int) -> dict[str, str]:
    url = f"http://127.0.0.1:{port}"
    return {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url}


def _parse_target(method: str, target: str) -> tuple[str, int, EgressProtocol, str]:
    """(host, port, protocol, origin-form path) of one proxy request."""
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        return host.strip("[]"), int(port), "https", ""
    if not target.startswith("http://"):
        raise ValueError("only absolute http:// URLs or CONNECT")
    rest = target[len("http://") :]
    authority, slash, path = rest.partition("/")
    host, colon, port = authority.rpartition(":")
    if not colon or "]" in port:
        host, port = authority, "80"
    return host.strip("[]"), int(port), "http", slash + path or "/"


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        client: socket.socket = self.request
        head = b""
        while b"\r\n\r\n" not in head and len(head) < _MAX_HEAD:
            chunk = client.recv(4096)
            if not chunk:
                return
            head += chunk
        header, _, body = head.partition(b"\r\n\r\n")
        lines = header.decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ")
            host, port, protocol, path = _parse_target(method, target)
        except ValueError:
            self.server.owner.record("deny", "", 0, "", "malformed request")
            client.sendall(_response(400, "prism egress: malformed proxy request"))
            return
        if not self.server.owner.policy.allows(host, port, protocol):
            self.server.owner.record("deny", host, port, protocol, "not in the allow-list")
            client.sendall(
                _response(403, f"prism egress: {protocol}://{host}:{port} is not allowed")
            )
            return
        try:
            upstream = socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT)
        except OSError as exc:
            self.server.owner.record(
                "allow", host, port, protocol, f"upstream failed: {exc.strerror}"
            )
            client.sendall(_response(502, f"prism egress: {host}:{port} unreachable"))
            return
        self.server.owner.record("allow", host, port, protocol, "allow-listed")
        upstream.settimeout(None)
        with upstream:
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                if body:
                    upstream.sendall(body)
            else:
                kept = [
                    line
                    for line in lines[1:]
                    if not line.lower().startswith(("proxy-", "connection:"))
                ]
                request = "\r\n".join(
                    [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
                )
                upstream.sendall(request.encode("latin-1") + body)
            _splice(client, upstream)


def _response(status: int, text: str) -> bytes:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = text.encode() + b"\n"
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nX-Prism-Egress: denied\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


def _splice(left: socket.socket, right: socket.socket) -> None:
    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    other = threading.Thread(target=pump, args=(right, left), daemon=True)
    other.start()
    pump(left, right)
    other.join()


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    owner: EgressProxy


class EgressProxy:
    """The host side of a sandbox's egress: serves ``socket_path`` until closed."""

    def __init__(
        self,
        policy: EgressPolicy,
        socket_path: str,
        *,
        on_event: EventSink | None = None,
        owner: int | None = None,
    ) -> None:
        self.policy = policy
        self.socket_path = socket_path
        self.decisions: list[dict[str, Any]] = []
        self._on_event = on_event
        self._lock = threading.Lock()
        self._closed = False
        self._server = _Server(socket_path, _Handler)
        self._server.owner = self
        os.chmod(socket_path, 0o600)
        if owner is not None:
            os.chown(socket_path, owner, owner)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def record(self, decision: str, host: str, port: int, protocol: str, reason: str) -> None:
        event = {
            "type": "sandbox_egress",
            "decision": decision,
            "host": host,
            "port": port,
            "protocol": protocol,
            "reason": reason,
            "policyFingerprint": self.policy.fingerprint,
        }
        with self._lock:
            self.decisions.append(event)
        if self._on_event is not None:
            self._on_event(event)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        try:
            os.unlink(self.socket_path)
        except OSError:
            pass
