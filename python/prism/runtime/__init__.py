"""The agent/session runtime: ``create_agent`` -> ``Agent`` -> ``AgentSession``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.runtime.agent import (
        Agent,
        create_agent,
    )
    from prism.runtime.checkpoint_state import (
        CheckpointState,
    )
    from prism.runtime.config import (
        AgentConfig,
        AgentOptions,
        validate_model,
    )
    from prism.runtime.events import (
        AGENT_EVENT_TYPES,
        AgentEventListener,
    )
    from prism.runtime.options import (
        RunOptions,
    )
    from prism.runtime.recovery import (
        ResumeAllReport,
    )
    from prism.runtime.result import (
        RunResult,
    )
    from prism.runtime.session import (
        AgentSession,
    )
    from prism.runtime.stream import (
        RunStream,
    )

_EXPORTS: dict[str, str] = {
    "Agent": "prism.runtime.agent",
    "create_agent": "prism.runtime.agent",
    "CheckpointState": "prism.runtime.checkpoint_state",
    "AgentConfig": "prism.runtime.config",
    "AgentOptions": "prism.runtime.config",
    "validate_model": "prism.runtime.config",
    "AGENT_EVENT_TYPES": "prism.runtime.events",
    "AgentEventListener": "prism.runtime.events",
    "RunOptions": "prism.runtime.options",
    "ResumeAllReport": "prism.runtime.recovery",
    "RunResult": "prism.runtime.result",
    "AgentSession": "prism.runtime.session",
    "RunStream": "prism.runtime.stream",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "AGENT_EVENT_TYPES",
    "Agent",
    "AgentConfig",
    "AgentEventListener",
    "AgentOptions",
    "AgentSession",
    "CheckpointState",
    "ResumeAllReport",
    "RunOptions",
    "RunResult",
    "RunStream",
    "create_agent",
    "validate_model",
]
