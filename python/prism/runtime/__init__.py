"""The agent/session runtime: ``create_agent`` -> ``Agent`` -> ``AgentSession``."""

from prism.runtime.agent import Agent, create_agent
from prism.runtime.config import AgentConfig
from prism.runtime.events import AGENT_EVENT_TYPES, AgentEventListener
from prism.runtime.options import RunOptions
from prism.runtime.result import RunResult
from prism.runtime.session import AgentSession
from prism.runtime.stream import RunStream

__all__ = [
    "AGENT_EVENT_TYPES",
    "Agent",
    "AgentConfig",
    "AgentEventListener",
    "AgentSession",
    "RunOptions",
    "RunResult",
    "RunStream",
    "create_agent",
]
