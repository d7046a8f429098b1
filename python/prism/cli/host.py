"""What the CLI wires together: provider, agent, store, commands, and the
helpers the print/json and rpc modes share.

The CLI is a host in the sense of the reference: it creates everything
explicitly from flags. Nothing is discovered, imported or loaded on its own
(``--resource``/``--extension``/``--tool`` are recorded only).

RPC ``command`` runs every command contributed to the host: the built-ins,
commands a Python host passes to ``prism.cli.main(commands=...)``, and the
commands of the extensions it passes (``extensions=...``, loaded by an
extension kernel in ``start()``), including the ``om:*`` commands of
``--memory observational``. A name contributed twice is a usage error.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prism.assembly import ContextRequest
from prism.cli.contributions import HostContributions, current_contributions
from prism.cli.options import CliOptions, UsageProblem, default_session_file
from prism.cli.providers import (
    ProviderSetup,
    create_cli_provider,
    known_provider_names,
    model_for,
)
from prism.compaction import CompactionOptions
from prism.contracts import ErrorInfo
from prism.errors import ConfigError, PrismError, error_info
from prism.extensions import CommandDefinition, collect_commands, define_command
from prism.providers import ProviderRegistry, create_provider_registry
from prism.registries import ContributionRegistry
from prism.runtime import Agent, AgentSession, create_agent
from prism.security.redaction import SecretRedactor, create_redactor
from prism.stores.base import SessionStore
from prism.stores.jsonl import create_jsonl_session_store


@dataclass(frozen=True, slots=True)
class StaticContext:
    """``--context TEXT`` as a context provider: the same block every turn."""

    text: str
    name: str = "cli"

    def provide(self, request: ContextRequest) -> str:
        return self.text


@dataclass(slots=True)
class CommandContext:
    """What a CLI command's ``run(args, ctx)`` receives."""

    session: AgentSession
    host: CliHost


def stderr_tracer_provider() -> Any:
    """``--otel``: spans go to stderr as the SDK's console exporter prints
    them (one JSON object per span), so stdout keeps only the mode's output.
    Each span is written as it ends, so nothing waits for a flush at exit."""
    import sys

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    return provider


class CliHost:
    def __init__(
        self,
        options: CliOptions,
        environ: Mapping[str, str] | None = None,
        *,
        contributions: HostContributions | None = None,
        agent: Agent | None = None,
    ) -> None:
        self.options = options
        if options.verbose:
            _log_to_stderr(self)
        env = os.environ if environ is None else environ
        self._environ = env
        # The host's own agent (--agent, or serve_rpc(agent)): the flags that
        # would build one are refused, and it is loaded in start().
        self.hosted = agent is not None or options.agent is not None
        self._hosted_agent = agent
        self.setup: ProviderSetup = create_cli_provider(options, env)
        self.contributions = contributions or current_contributions()
        self.memory: Any = None
        if options.memory == "observational":
            from prism.cli.memory import CliMemory

            self.memory = CliMemory(options, self.setup)
        compaction = cli_compaction(options, self.setup)
        if self.memory is not None and options.compaction != "llm":
            # The memory strategy, unless --compaction llm asks for model summaries.
            compaction = CompactionOptions(
                strategy=self.memory.strategy, threshold_entries=options.compact
            )
        # setModel may switch provider: every provider this process builds is
        # registered here, and the agent resolves a turn's provider from it.
        self.providers: ProviderRegistry = create_provider_registry()
        self.providers.register_provider(self.setup.provider, self.setup.model["provider"])
        if self.memory is not None:
            self.memory.providers = self.providers
        # Persist only when a session id is named: an anonymous print/json
        # run or rpc session leaves no file behind.
        self.session_file: Path | None = None
        store: SessionStore | None = None
        if options.session is not None:
            self.session_file = default_session_file(env)
            store = create_jsonl_session_store(self.session_file)
        self._store = store
        self._compaction = compaction
        self._tracer_provider: Any = stderr_tracer_provider() if options.otel else None
        self.agent: Agent
        if not self.hosted:
            self.agent = self._build_agent(self.setup.secrets)
        if self.memory is not None:
            self.memory.agent_redactor = lambda: self.agent.config.redactor
        self._commands: ContributionRegistry[CommandDefinition] | None = None
        self._extension_commands: ContributionRegistry[Any] | None = None

    @property
    def commands(self) -> ContributionRegistry[CommandDefinition]:
        """Built on first use: only rpc mode runs commands, and compiling
        their schemas imports jsonschema, which print/json runs never need."""
        if self._commands is None:
            sources: list[Any] = [builtin_commands(), self.contributions.commands]
            if self._extension_commands is not None:
                sources.append(self._extension_commands)
            self._commands = collect_commands(*sources)
        return self._commands

    async def start(self) -> None:
        """Load the contributed extensions and check every contributed command
        before anything is served: a failed extension or a clashing name is a
        usage problem. Without contributions this does nothing."""
        if self.hosted and not hasattr(self, "agent"):
            await self._load_hosted_agent()
        extensions: list[Any] = list(self.contributions.extensions)
        if self.memory is not None:
            extensions.insert(0, self.memory.extension())
        if not extensions and not self.contributions.commands:
            return
        if extensions:
            from prism.extensions import create_extension_kernel

            kernel = create_extension_kernel(redactor=self.agent.config.redactor)
            report = await kernel.load(extensions)
            if report.failed:
                failure = report.failed[0]
                raise UsageProblem(
                    f"extension {failure.extension!r} failed to load ({failure.phase}): "
                    f"{failure.error['message']}"
                )
            self._extension_commands = kernel.registries.commands
        self._commands = None
        try:
            self.commands  # noqa: B018 - built now so a clash fails before serving
        except PrismError as error:
            raise UsageProblem(str(error)) from None

    async def _load_hosted_agent(self) -> None:
        agent = self._hosted_agent
        if agent is None:
            from prism.cli.agent_loader import load_agent

            assert self.options.agent is not None
            agent = await load_agent(self.options.agent)
        if self._tracer_provider is not None:
            from prism.telemetry import instrument

            instrument(agent, tracer_provider=self._tracer_provider)
        self.agent = agent
        # setModel may switch only to providers the host's agent can reach.
        self.providers = agent.config.providers or create_provider_registry()
        own = agent.config.model["provider"]
        if not self.providers.has_provider(own):
            self.providers.register_provider(agent.config.provider, own)
        # --session persists to the CLI's session file unless the agent has its own store.
        if agent.config.store is not None:
            self._store = None

    def track(self, session: AgentSession) -> AgentSession:
        """Sessions the memory helpers may read (by id) are the ones this host serves."""
        if self.memory is not None:
            self.memory.track(session)
        return session

    async def after_run(self, session: AgentSession) -> None:
        """The post-run gate of ``--memory observational`` (a no-op without it)."""
        if self.memory is not None:
            await self.memory.after_run(session)

    def _build_agent(self, secrets: tuple[str, ...]) -> Agent:
        options = self.options
        agent = create_agent(
            model=self.setup.model,
            provider=self.setup.provider,
            system=options.system,
            compaction=self._compaction,
            max_tool_rounds=(options.max_tool_rounds if options.max_tool_rounds is not None else 8),
            secrets=secrets,
            context_providers=(StaticContext(options.context),) if options.context else (),
            tools=[self.memory.recall_tool()] if self.memory is not None else (),
            store=self._store,
            providers=self.providers,
        )
        if self._tracer_provider is not None:
            from prism.telemetry import instrument

            instrument(agent, tracer_provider=self._tracer_provider)
        return agent

    async def use_provider(self, name: str, session: AgentSession) -> AgentSession:
        """Make provider ``name`` reachable (built like ``--provider name``,
        its key from the environment) and return the session handle to keep
        using. A new key joins the redactor: the agent is rebuilt with it and
        the session reopened on the new agent (same store, same entries)."""
        if self.providers.has_provider(name):
            return session
        if self.hosted:
            raise UsageProblem(
                f"the host's agent cannot reach provider {name!r} (register it in the "
                "agent's providers registry)"
            )
        if name not in known_provider_names():
            raise UsageProblem(
                f"unknown provider {name!r} (choose from {', '.join(known_provider_names())})"
            )
        options = dataclasses.replace(
            self.options, provider=name, model=None, base_url=None, api_key_env=None
        )
        setup = create_cli_provider(options, self._environ)
        self.providers.register_provider(setup.provider, name)
        known = self.agent.config.secrets
        if set(setup.secrets) <= set(known):
            return session
        self.agent = self._build_agent((*known, *setup.secrets))
        return self.track(await self.agent.open_session(session.id, store=session.store))

    def create_session(self, session_id: str | None = None) -> AgentSession:
        return self.track(
            self.agent.create_session(
                session_id if session_id is not None else self.options.session,
                store=self._session_store(),
            )
        )

    async def open_session(self, session_id: str) -> AgentSession:
        return self.track(await self.agent.open_session(session_id, self._session_store()))

    @property
    def session_file_store(self) -> SessionStore | None:
        """The CLI's session file as a store (``None`` unless a session is named)."""
        return self._store

    def _session_store(self) -> SessionStore | None:
        # The CLI's own agent carries the store; a host's agent without one
        # gets the session file when --session names a session.
        return self._store if self.hosted else None


def cli_compaction(options: CliOptions, setup: ProviderSetup) -> CompactionOptions | None:
    """``--compact N`` is the auto-compaction threshold; ``--compaction llm``
    makes the session's own provider write the summaries (with
    ``--summary-model`` when given), for auto-compaction and the rpc
    ``compact`` command alike."""
    strategy = None
    if options.compaction == "llm":
        from prism.compaction.llm import create_llm_compaction_strategy

        summary = setup.model
        if options.summary_model is not None:
            summary = model_for(setup.model["provider"], options.summary_model)
        strategy = create_llm_compaction_strategy(provider=setup.provider, model=summary)
    if strategy is None and options.compact is None:
        return None
    return CompactionOptions(strategy=strategy, threshold_entries=options.compact)


def _list_commands(args: Mapping[str, Any], ctx: CommandContext) -> dict[str, Any]:
    return {
        "commands": [
            {"name": c.name, "description": c.description} for c in ctx.host.commands.list()
        ]
    }


def _recorded_flags(args: Mapping[str, Any], ctx: CommandContext) -> dict[str, Any]:
    return ctx.host.options.recorded()


async def _session_entries(args: Mapping[str, Any], ctx: CommandContext) -> dict[str, Any]:
    return {"sessionId": ctx.session.id, "entries": await ctx.session.entries()}


def builtin_commands() -> list[CommandDefinition]:
    """Read-only commands the rpc ``command`` request can run; any other name
    is refused before anything executes."""
    empty = {"type": "object", "additionalProperties": False}
    return [
        define_command(
            "commands", _list_commands, description="List these commands.", parameters=empty
        ),
        define_command(
            "flags",
            _recorded_flags,
            description="The --config/--resource/--extension/--tool values (recorded, not loaded).",
            parameters=empty,
        ),
        define_command(
            "session.entries",
            _session_entries,
            description="Every stored entry of the current session, all branches.",
            parameters=empty,
        ),
    ]


class _HostRedactor:
    """Masks with the redactor of whatever agent the host holds now: a
    provider switch rebuilds the agent with the new key among its secrets."""

    def __init__(self, host: CliHost) -> None:
        self._host = host

    def redact_text(self, text: str) -> str:
        agent: Agent | None = getattr(self._host, "agent", None)
        if agent is None:
            secrets = getattr(getattr(self._host, "setup", None), "secrets", ())
            return create_redactor(secrets).redact_text(text) if secrets else text
        return agent.config.redactor.redact_text(text)


def _log_to_stderr(host: CliHost) -> None:
    """``--verbose``: every ``prism.*`` record at DEBUG on stderr, masked
    with the agent's secrets on top of each layer's own redaction."""
    from prism.log import enable_logging

    enable_logging(logging.DEBUG, redactor=_HostRedactor(host))


def create_host(options: CliOptions, agent: Agent | None = None) -> CliHost:
    """A ConfigError while wiring things up is a usage problem (exit 2)."""
    try:
        return CliHost(options, agent=agent)
    except ConfigError as error:
        raise UsageProblem(str(error)) from None


def describe_exception(error: BaseException, redactor: SecretRedactor) -> ErrorInfo:
    """ErrorInfo for an exception the runtime did not turn into an event
    (e.g. a store that cannot create its file); the text is redacted."""
    return error_info(error, redactor, code="internal_error", with_type=True)
