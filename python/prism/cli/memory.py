"""``--memory observational``: what the CLI wires when it is on.

- the agent gets the ``recall`` tool and compacts with the memory strategy;
- one worker runtime per session runs the post-run gate after every run, on
  the session's provider and model (or ``--memory-model``);
- ``om:status`` / ``om:view`` are contributed through the memory extension,
  so they reach RPC ``command`` by the same path as any extension's commands.

Settings come from the ``observational-memory`` key of ``--config``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prism.cli.options import CliOptions, UsageProblem
from prism.cli.providers import ProviderSetup, model_for
from prism.contracts import ModelConfig
from prism.errors import SettingsError
from prism.extensions import Extension
from prism.memory import (
    ObservationalMemoryRuntime,
    ObservationalMemorySettings,
    create_observational_memory_compaction_strategy,
    create_observational_memory_extension,
    create_observational_memory_runtime,
    create_recall_memory_tool,
    resolve_observational_memory_settings,
)
from prism.runtime import AgentSession
from prism.security.redaction import SecretRedactor, create_redactor
from prism.tools import ToolDefinition


class CliMemory:
    def __init__(self, options: CliOptions, setup: ProviderSetup) -> None:
        try:
            self.settings: ObservationalMemorySettings = resolve_observational_memory_settings(
                options.config
            )
        except SettingsError as error:
            raise UsageProblem(f"--config: {error}") from None
        self._setup = setup
        self._memory_model = options.memory_model
        self._sessions: dict[str, AgentSession] = {}
        # Set by the host once they exist: its provider registry, and the
        # agent's current redactor (setModel may rebuild the agent with a new key).
        self.providers: Any = None
        self.agent_redactor: Callable[[], SecretRedactor] | None = None
        self._runtimes: dict[str, ObservationalMemoryRuntime] = {}
        # The same secrets as the agent's (the provider's API key).
        self._redactor: SecretRedactor = create_redactor(setup.secrets)
        self.strategy = create_observational_memory_compaction_strategy(settings=self.settings)

    def track(self, session: AgentSession) -> None:
        self._sessions[session.id] = session

    async def branch_entries(self, session_id: str) -> list[Any]:
        session = self._sessions.get(session_id)
        if session is None:
            return []
        return await session.branch_entries()

    def recall_tool(self) -> ToolDefinition:
        return create_recall_memory_tool(self.branch_entries, redactor=self._redactor)

    def extension(self) -> Extension:
        return create_observational_memory_extension(
            strategy=False,
            commands={
                "get_entries": self.branch_entries,
                "runtime": self._runtime_of,
                "settings": self.settings,
            },
            redactor=self._redactor,
        )

    def runtime(self, session: AgentSession) -> ObservationalMemoryRuntime:
        redactor = self.agent_redactor() if self.agent_redactor is not None else self._redactor
        runtime = self._runtimes.get(session.id)
        if runtime is None or runtime.session is not session or runtime.redactor is not redactor:
            fresh = create_observational_memory_runtime(
                session=session,
                worker_provider=self._setup.provider,
                worker_model=self._worker_model(session),
                settings=self.settings,
                redactor=redactor,
            )
            if runtime is not None:  # the same session on a rebuilt agent: keep its history
                fresh.last_error, fresh.last_report = runtime.last_error, runtime.last_report
            runtime = self._runtimes[session.id] = fresh
        return runtime

    def _runtime_of(self, session_id: str) -> ObservationalMemoryRuntime | None:
        session = self._sessions.get(session_id)
        return self.runtime(session) if session is not None else None

    async def after_run(self, session: AgentSession) -> None:
        """The post-run gate; a worker failure is kept for ``om:status``, never raised."""
        self.track(session)
        runtime = self.runtime(session)
        # Workers follow the session's model, and its provider, when rpc
        # setModel changes them; the host's registry holds every provider.
        model = self._worker_model(session)
        runtime.worker_model = model
        if self.providers is not None and self.providers.has_provider(model["provider"]):
            runtime.worker_provider = self.providers.resolve_provider(model["provider"])
        await runtime.after_run()

    def _worker_model(self, session: AgentSession) -> ModelConfig:
        current = session.current_model
        if self._memory_model is None:
            return current
        return model_for(current["provider"], self._memory_model)
