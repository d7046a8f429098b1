"""The inspector's routes: the page, its static files and a JSON API over a
:class:`~prism.inspect.source.SessionSource`, plus two event streams (the
live tail and replay). Every JSON payload goes through the redactor before
it is served."""

from __future__ import annotations

import importlib.resources
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import quote

import anyio

from prism.inspect.http import Request, Response, SseResponse, query_int
from prism.inspect.replay import find_runs, replay_run
from prism.inspect.source import InspectError, SessionSource
from prism.inspect.views import SessionView
from prism.security.redaction import SecretRedactor, require_redactor

__all__ = ["InspectorApp", "static_text"]

_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/app.css": ("app.css", "text/css; charset=utf-8"),
}
TAIL_POLL_SECONDS = 0.05
KEEPALIVE_SECONDS = 15.0


def static_text(name: str) -> str:
    """A file of the page as shipped in the package (``prism/inspect/static``)."""
    return (importlib.resources.files("prism.inspect") / "static" / name).read_text("utf-8")


class InspectorApp:
    def __init__(
        self,
        source: SessionSource,
        *,
        redactor: SecretRedactor,
        follow: str | None = None,
        poll_seconds: float = TAIL_POLL_SECONDS,
    ) -> None:
        self.source = source
        self.redactor = require_redactor(redactor, owner="InspectorApp")
        self.follow = follow
        self.poll_seconds = poll_seconds
        self._views: dict[tuple[str, str | None], tuple[str | None, SessionView]] = {}
        self._routes: dict[str, Callable[[Request], Awaitable[Response | SseResponse]]] = {
            "/api/info": self._info,
            "/api/sessions": self._sessions,
            "/api/session": self._session,
            "/api/messages": self._messages,
            "/api/timeline": self._timeline,
            "/api/costs": self._costs,
            "/api/memory": self._memory,
            "/api/checkpoints": self._checkpoints,
            "/api/runs": self._runs,
            "/api/tail": self._tail,
            "/api/replay": self._replay,
        }

    async def handle(self, request: Request) -> Response | SseResponse:
        static = _STATIC.get(request.path)
        if static is not None:
            text = static_text(static[0])
            if static[0] == "index.html":  # the guard has checked this token
                text = text.replace("__TOKEN__", quote(request.query.get("token", ""), safe=""))
            return Response(200, text.encode(), static[1])
        route = self._routes.get(request.path)
        if route is None:
            return Response.error(404, f"no such page: {request.path}")
        try:
            return await route(request)
        except InspectError as exc:
            return Response.error(502, self.redactor.redact_text(str(exc)))

    def _json(self, payload: Any) -> Response:
        return Response.json(self.redactor.redact_value(payload))

    async def view(self, session_id: str, leaf: str | None = None) -> SessionView:
        """The session's view, rebuilt only when its last entry changed."""
        last = await self.source.last_entry_id(session_id)
        key = (session_id, leaf)
        cached = self._views.get(key)
        if cached is not None and cached[0] == last:
            return cached[1]
        entries = await self.source.entries(session_id)
        view = SessionView(session_id, entries, leaf)
        self._views[key] = (last, view)
        return view

    async def warm(self) -> int:
        """Build every session's view (branch, costs, tree) before the URL is
        announced, so the first page load only reads caches. Returns the
        number of entries read."""
        total = 0
        for session_id in await self.source.sessions():
            view = await self.view(session_id)
            view.summary()
            view.tree()
            total += len(view.entries)
        return total

    async def _session_view(self, request: Request) -> SessionView:
        session_id = request.query.get("id", "")
        if session_id not in await self.source.sessions():
            raise InspectError(f"no session {session_id!r} in {self.source.label}")
        return await self.view(session_id, request.query.get("leaf") or None)

    async def _info(self, request: Request) -> Response:
        return self._json(
            {
                "source": self.source.label,
                "kind": self.source.kind,
                "quarantine": self.source.quarantined(),
                "follow": self.follow,
            }
        )

    async def _sessions(self, request: Request) -> Response:
        summaries = [(await self.view(s)).summary() for s in await self.source.sessions()]
        return self._json({"sessions": summaries})

    async def _session(self, request: Request) -> Response:
        view = await self._session_view(request)
        return self._json({"summary": view.summary(), "tree": view.tree()})

    async def _messages(self, request: Request) -> Response:
        view = await self._session_view(request)
        limit = query_int(request.query, "limit", 50) or 50
        offset = query_int(request.query, "offset", None)
        return self._json(view.messages(offset, limit, request.query.get("around") or None))

    async def _timeline(self, request: Request) -> Response:
        view = await self._session_view(request)
        limit = query_int(request.query, "limit", 100) or 100
        return self._json(view.timeline_page(query_int(request.query, "offset", None), limit))

    async def _costs(self, request: Request) -> Response:
        return self._json((await self._session_view(request)).cost_report())

    async def _memory(self, request: Request) -> Response:
        return self._json((await self._session_view(request)).memory())

    async def _checkpoints(self, request: Request) -> Response:
        return self._json((await self._session_view(request)).checkpoints())

    async def _runs(self, request: Request) -> Response:
        view = await self._session_view(request)
        return self._json({"runs": [r.to_json(view.branch) for r in find_runs(view.branch)]})

    async def _tail(self, request: Request) -> SseResponse:
        session_id = request.query.get("id", "")
        after = request.query.get("after") or None
        return SseResponse(self._tail_events(session_id, after))

    async def _tail_events(
        self, session_id: str, after: str | None
    ) -> AsyncIterator[tuple[str, Any] | None]:
        """New entries of the session as another process appends them. The
        store is polled (``last_entry_id`` first: a stat or an index lookup),
        so a writer needs no cooperation from the inspector."""
        known = after
        idle = 0.0
        while True:
            last = await self.source.last_entry_id(session_id)
            if last is not None and last != known:
                entries = await self.source.entries(session_id)
                start = 0
                for index in range(len(entries) - 1, -1, -1):
                    if entries[index]["id"] == known:
                        start = index + 1
                        break
                for entry in entries[start:]:
                    yield "entry", self.redactor.redact_value(dict(entry))
                # What was sent, not `last`: a writer may have appended
                # between the two reads, and those entries went out above.
                known = entries[-1]["id"] if entries else last
                idle = 0.0
            elif idle >= KEEPALIVE_SECONDS:
                yield None
                idle = 0.0
            await anyio.sleep(self.poll_seconds)
            idle += self.poll_seconds

    async def _replay(self, request: Request) -> Response | SseResponse:
        view = await self._session_view(request)
        wanted = request.query.get("run", "")
        run = next((r for r in find_runs(view.branch) if r.run_id == wanted), None)
        if run is None:
            return Response.error(404, f"no recorded run {wanted!r} on this branch")
        return SseResponse(self._replay_events(view, run))

    async def _replay_events(
        self, view: SessionView, run: Any
    ) -> AsyncIterator[tuple[str, Any] | None]:
        async for event in replay_run(view.branch, run):
            yield "event", self.redactor.redact_value(event)
        yield "done", {"runId": run.run_id}
