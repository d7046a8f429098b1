"""OpenTelemetry traces and metrics for agents and sessions (extra ``otel``).

``instrument(agent_or_session)`` subscribes one listener to the session
events and turns them into spans (run, provider turn, tool call, compaction)
and metrics (tokens, latencies, gate trips, cache busts, compactions).
``instrument_store(store)`` adds store append latency. Nothing here runs
unless a host calls it, so an uninstrumented agent pays nothing.

Content (message text, tool arguments and results) stays out of spans unless
``capture_content=True``; what is captured has passed the agent's redactor.
See docs/telemetry.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prism.errors import ConfigError

if TYPE_CHECKING:
    from prism.stores.base import SessionStore
    from prism.telemetry._instrument import Instrumentation

__all__ = ["Instrumentation", "instrument", "instrument_store"]

_EXTRA_HINT = "telemetry needs OpenTelemetry: pip install 'prism-harness[otel]'"


def _require_otel() -> None:
    try:
        import opentelemetry.metrics
        import opentelemetry.trace  # noqa: F401
    except ImportError as error:  # pragma: no cover - exercised without the extra
        raise ConfigError(_EXTRA_HINT) from error


def instrument(
    target: Any,
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    capture_content: bool = False,
) -> Instrumentation:
    """Trace and meter an :class:`~prism.runtime.Agent` (every session it
    creates from now on) or one :class:`~prism.runtime.AgentSession`.

    ``tracer_provider``/``meter_provider`` default to the global ones. Returns
    an :class:`Instrumentation`; ``uninstrument()`` detaches it.
    """
    _require_otel()
    from prism.telemetry._instrument import instrument as _instrument

    return _instrument(
        target,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
    )


def instrument_store(store: SessionStore, *, meter_provider: Any = None) -> SessionStore:
    """A store that records ``prism.store.append.duration`` for each append
    and otherwise behaves exactly like ``store``; pass it to ``create_agent``."""
    _require_otel()
    from prism.telemetry._store import InstrumentedStore

    return InstrumentedStore(store, meter_provider=meter_provider)


def __getattr__(name: str) -> Any:
    if name == "Instrumentation":
        _require_otel()
        from prism.telemetry._instrument import Instrumentation

        return Instrumentation
    raise AttributeError(f"module 'prism.telemetry' has no attribute {name!r}")
