"""``prism inspect --export report.html``: one self-contained HTML file of a
session, the page and its data inlined (no server, no network), redacted
like every page the server sends."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from prism.inspect.app import static_text
from prism.inspect.replay import find_runs
from prism.inspect.source import InspectError, SessionSource
from prism.inspect.views import SessionView
from prism.security.redaction import SecretRedactor, require_redactor

__all__ = ["EXPORT_ENTRY_LIMIT", "export_html", "render_report"]

EXPORT_ENTRY_LIMIT = 20_000


async def render_report(source: SessionSource, session_id: str, *, redactor: SecretRedactor) -> str:
    """The report's HTML text (the branch ending at the session's last entry;
    at most its last :data:`EXPORT_ENTRY_LIMIT` entries are embedded)."""
    require_redactor(redactor, owner="render_report")
    if session_id not in await source.sessions():
        raise InspectError(f"no session {session_id!r} in {source.label}")
    view = SessionView(session_id, await source.entries(session_id))
    branch = view.branch[-EXPORT_ENTRY_LIMIT:]
    data: dict[str, Any] = {
        "info": {
            "source": os.path.basename(source.label),
            "kind": f"exported report of {source.kind}",
            "quarantine": source.quarantined(),
            "follow": None,
        },
        "sessions": {"sessions": [view.summary()]},
        "session": {"summary": view.summary(), "tree": view.tree()},
        "messages": list(branch),
        "timeline": {"steps": view.timeline_steps(), "counts": view.timeline_counts},
        "costs": view.cost_report(),
        "memory": view.memory(),
        "checkpoints": view.checkpoints(),
        "runs": {"runs": [r.to_json(view.branch) for r in find_runs(view.branch)]},
    }
    payload = json.dumps(redactor.redact_value(data), ensure_ascii=False, separators=(",", ":"))
    # Inside <script>, "</script" would end the element and "<!--" change how it
    # parses; "\\u003c" is the same "<" to JSON.parse and no markup to HTML.
    payload = payload.replace("<", "\\u003c")
    page = static_text("index.html")
    page = page.replace(
        '<link rel="stylesheet" href="static/app.css?token=__TOKEN__">',
        f"<style>\n{static_text('app.css')}\n</style>",
    )
    script = static_text("app.js").replace("</", "<\\/")
    page = page.replace(
        '<script src="static/app.js?token=__TOKEN__"></script>',
        f'<script type="application/json" id="prism-data">{payload}</script>\n<script>\n{script}\n</script>',
    )
    return page


async def export_html(
    source: SessionSource,
    session_id: str,
    path: str,
    *,
    redactor: SecretRedactor,
) -> None:
    """Write the report to ``path`` atomically (a temporary file renamed over
    it): a failure leaves no half-written report."""
    require_redactor(redactor, owner="export_html")
    text = await render_report(source, session_id, redactor=redactor)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, temporary = tempfile.mkstemp(prefix=".prism-report-", suffix=".html", dir=directory)
    except OSError as exc:
        raise InspectError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except OSError as exc:
        os.unlink(temporary)
        raise InspectError(f"cannot write {path}: {exc.strerror or exc}") from None
