"""Start the inspector: bind loopback, make the token, serve until cancelled."""

from __future__ import annotations

import gc
import ipaddress
import secrets
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

import anyio

from prism.inspect.app import InspectorApp
from prism.inspect.http import Guard, allowed_hosts, serve_http
from prism.inspect.source import InspectError, open_source
from prism.security.redaction import SecretRedactor, require_redactor

__all__ = ["InspectorAddress", "check_bind_host", "serve_inspector"]


@dataclass(frozen=True)
class InspectorAddress:
    host: str
    port: int
    token: str
    session: str | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        fragment = f"#session={quote(self.session, safe='')}&follow=1" if self.session else ""
        return f"http://{host}:{self.port}/?token={self.token}{fragment}"


def check_bind_host(host: str, *, allow_remote: bool) -> None:
    """Refuse an address other hosts can reach unless ``allow_remote``; warn
    when it is allowed (the token is then all that guards the sessions)."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        return
    if not allow_remote:
        raise InspectError(
            f"refusing to bind {host}: the inspector binds loopback only; pass "
            "--allow-remote-bind to serve on an address other machines can reach"
        )
    warnings.warn(
        f"the inspector listens on {host}, reachable from other machines; anyone with "
        "the URL's token can read these sessions (sent unencrypted over HTTP)",
        stacklevel=2,
    )


async def serve_inspector(
    target: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    follow: str | None = None,
    allow_remote: bool = False,
    redactor: SecretRedactor,
    on_ready: Callable[[InspectorAddress], None] | None = None,
    freeze_gc: bool = False,
) -> None:
    """Serve the inspector over ``target`` (a JSONL or SQLite path, or a
    PostgreSQL URL) until cancelled. ``on_ready`` gets the address (with the
    URL to open) once the socket listens. Raises :class:`InspectError` when
    the target cannot be read or the address is refused.

    ``freeze_gc`` (what ``prism inspect`` passes) moves everything loaded so
    far, the store's index included, out of the cycle collector's reach
    (``gc.freeze``): a full collection over a 100,000-entry index would
    otherwise stall the live tail for seconds. Leave it off when serving
    from inside a host process whose objects should stay collectable."""
    require_redactor(redactor, owner="serve_inspector")
    check_bind_host(host, allow_remote=allow_remote)
    source = await open_source(target)
    try:
        if follow is not None and follow not in await source.sessions():
            raise InspectError(f"no session {follow!r} in {source.label}")
        token = token or secrets.token_urlsafe(24)
        app = InspectorApp(source, redactor=redactor, follow=follow)
        await app.warm()
        if freeze_gc:
            gc.collect()
            gc.freeze()
        try:
            listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
        except OSError as exc:
            raise InspectError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        async with listener:
            bound = listener.extra(anyio.abc.SocketAttribute.local_port)
            guard = Guard(token, allowed_hosts(host, bound))
            if on_ready is not None:
                on_ready(InspectorAddress(host, bound, token, follow))
            await serve_http(listener, guard, app.handle)
    finally:
        await source.aclose()
