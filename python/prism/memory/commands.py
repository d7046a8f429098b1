"""The optional ``om:status`` and ``om:view`` commands (inert until a host
registers them, e.g. on the CLI's RPC ``command`` request)."""

from __future__ import annotations

from typing import Any

from prism.compaction.observational_memory.ledger import fold_observational_memory_ledger
from prism.compaction.observational_memory.projection import build_observational_memory_projection
from prism.compaction.observational_memory.render import render_observational_memory
from prism.compaction.observational_memory.settings import (
    ObservationalMemorySettings,
    resolve_observational_memory_settings,
)
from prism.errors import CommandError
from prism.extensions.commands import CommandDefinition, define_command
from prism.memory._entries import (
    GetEntries,
    check_get_entries,
    load_entries,
    session_id_of,
)
from prism.security.redaction import SecretRedactor, require_redactor

STATUS_COMMAND = "om:status"
VIEW_COMMAND = "om:view"
VIEW_USAGE = "Usage: /om:view [full]"

# A runtime, or a function from session id to the runtime serving it (a host
# with several sessions keeps one runtime per session).
RuntimeLike = Any


def _runtime_for(runtime: RuntimeLike, session_id: str) -> Any:
    if runtime is None:
        return None
    if callable(runtime) and not hasattr(runtime, "status"):
        return runtime(session_id)
    return runtime


def _session(ctx: object, command: str) -> str:
    session_id = session_id_of(ctx)
    if session_id is None:
        raise CommandError(f"{command} needs a session (ctx.session.id or ctx.session_id)")
    return session_id


def create_memory_status_command(
    get_entries: GetEntries,
    *,
    runtime: RuntimeLike = None,
    settings: ObservationalMemorySettings | None = None,
    name: str = STATUS_COMMAND,
    redactor: SecretRedactor,
) -> CommandDefinition:
    """``om:status``: recorded / dropped / active / visible observations,
    recorded / visible reflections, pool token counts against the pool
    settings, coverage markers and, with ``runtime``, its ``inFlight`` and
    ``lastError``. The result has a ``text`` line for terminals."""
    check_get_entries(get_entries, "create_memory_status_command")
    redactor = require_redactor(redactor, owner="create_memory_status_command")
    pool = settings or resolve_observational_memory_settings()

    async def run(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        session_id = _session(ctx, name)
        entries = await load_entries(get_entries, session_id)
        ledger = fold_observational_memory_ledger(entries)
        active = build_observational_memory_projection(ledger, "active")
        visible = build_observational_memory_projection(ledger, "folded")
        result: dict[str, Any] = {
            "sessionId": session_id,
            "observations": {
                "recorded": len(ledger.observations),
                "dropped": len(ledger.dropped),
                "active": len(active.observations),
                "visible": len(visible.observations),
            },
            "reflections": {
                "recorded": len(ledger.reflections),
                "visible": len(visible.reflections),
            },
            "pool": {
                "activeTokens": active.observation_tokens,
                "visibleTokens": visible.observation_tokens,
                "reflectionTokens": visible.reflection_tokens,
                "maxTokens": pool.observations_pool_max_tokens,
                "targetTokens": pool.observations_pool_target_tokens,
            },
            "coverage": {
                "observedUpToId": ledger.observed_up_to,
                "reflectedUpToId": ledger.reflected_up_to,
                "droppedUpToId": ledger.dropped_up_to,
            },
        }
        live = _runtime_for(runtime, session_id)
        if live is not None:
            result["runtime"] = live.status()
        counts = result["observations"]
        text = (
            f"observations: {counts['recorded']} recorded, {counts['dropped']} dropped, "
            f"{counts['active']} active, {counts['visible']} visible; reflections: "
            f"{result['reflections']['recorded']} recorded, "
            f"{result['reflections']['visible']} visible; pool: "
            f"{active.observation_tokens}/{pool.observations_pool_max_tokens} tokens"
        )
        if live is not None:
            state = result["runtime"]
            text += f"; workers: {'running' if state['inFlight'] else 'idle'}"
            if state.get("lastError"):
                text += f" (last error: {state['lastError'].get('message')})"
        result["text"] = text
        return redactor.redact_value(result) if len(redactor) else result

    return define_command(
        name,
        run,
        description="Observational memory counts, pool tokens and worker state.",
        parameters={"type": "object", "additionalProperties": False},
    )


def create_memory_view_command(
    get_entries: GetEntries, *, name: str = VIEW_COMMAND, redactor: SecretRedactor
) -> CommandDefinition:
    """``om:view``: the visible memory as the model sees it; ``{"mode": "full"}``
    the full active recorded memory. Any other mode answers
    ``Usage: /om:view [full]`` (``{"text": ..., "usage": true}``)."""
    check_get_entries(get_entries, "create_memory_view_command")
    redactor = require_redactor(redactor, owner="create_memory_view_command")

    async def run(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        mode = args.get("mode")
        if mode not in (None, "", "full"):
            return {"text": VIEW_USAGE, "usage": True}
        session_id = _session(ctx, name)
        entries = await load_entries(get_entries, session_id)
        projection = build_observational_memory_projection(
            entries, "active" if mode == "full" else "folded"
        )
        text = render_observational_memory(
            projection.reflections, projection.observations, redactor=redactor
        )
        result = {
            "sessionId": session_id,
            "mode": "full" if mode == "full" else "visible",
            "text": text or "(no observational memory on this branch)",
            "observations": projection.observations,
            "reflections": projection.reflections,
        }
        return redactor.redact_value(result) if len(redactor) else result

    return define_command(
        name,
        run,
        description="Show observational memory: visible (default) or full.",
        parameters={
            "type": "object",
            "properties": {"mode": {}},
            "additionalProperties": False,
        },
    )


def create_observational_memory_commands(
    get_entries: GetEntries,
    *,
    runtime: RuntimeLike = None,
    settings: ObservationalMemorySettings | None = None,
    redactor: SecretRedactor,
) -> list[CommandDefinition]:
    """``[om:status, om:view]`` sharing one callback, runtime and secrets."""
    return [
        create_memory_status_command(
            get_entries, runtime=runtime, settings=settings, redactor=redactor
        ),
        create_memory_view_command(get_entries, redactor=redactor),
    ]
