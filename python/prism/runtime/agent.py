"""``create_agent`` and ``Agent``: a frozen configuration that makes sessions."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from prism.contracts import Message
from prism.errors import ConfigError, UnknownNameError
from prism.runtime.config import AgentConfig, AgentOptions, validate_model
from prism.runtime.events import AgentEventListener
from prism.runtime.options import RunOptions
from prism.runtime.recovery import ResumeAllReport, resume_sessions, unfinished_sessions
from prism.runtime.result import RunResult
from prism.runtime.session import AgentSession
from prism.stores.base import SessionStore
from prism.stores.memory import MemorySessionStore

if TYPE_CHECKING:
    from typing_extensions import Unpack


class Agent:
    """Holds an :class:`AgentConfig`; sessions share it (and nothing else).

    Sessions without an explicit store use the agent's ``store``, or one
    in-memory store the agent creates on first need, so every session of an
    agent can see (``open_session``/``fork``/``clone``) the others.
    """

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self._default_store: SessionStore | None = config.store
        self._session_listeners: list[AgentEventListener] = []

    @property
    def store(self) -> SessionStore:
        if self._default_store is None:
            self._default_store = MemorySessionStore()
        return self._default_store

    def create_session(
        self, id: str | None = None, store: SessionStore | None = None
    ) -> AgentSession:
        """A session handle; an existing id on the store resumes that session
        (its entries load on first use, the leaf is the last appended entry)."""
        if id is not None and (not isinstance(id, str) or not id.strip()):
            raise ConfigError(f"session id must be a non-empty string, got {id!r}")
        if id is not None and self.config.redactor.contains(id):
            # Ids are never redacted (they link the conversation), so an id
            # holding a secret would carry it into every store and event.
            raise ConfigError(
                "session id contains one of the agent's secrets; choose an id without it "
                "(ids are stored and shown as they are, never redacted)"
            )
        if store is not None and not isinstance(store, SessionStore):
            raise ConfigError("store must implement SessionStore")
        session = AgentSession(self, id or f"session_{uuid.uuid4().hex[:16]}", store or self.store)
        for listener in self._session_listeners:
            session.subscribe(listener)
        return session

    def subscribe(self, listener: AgentEventListener) -> Callable[[], None]:
        """Listen to every session this agent creates from now on (sessions
        that already exist keep their own listeners). Returns an unsubscribe
        function that also detaches it from those sessions' future runs."""
        if not callable(listener):
            raise TypeError("event listener must be callable")
        listeners = self._session_listeners
        listeners.append(listener)
        active = True

        def relay(event: Any) -> None:
            if active:
                listener(event)

        # Sessions subscribe ``relay`` so unsubscribing reaches them too.
        listeners[-1] = relay

        def unsubscribe() -> None:
            nonlocal active
            active = False
            if relay in listeners:
                listeners.remove(relay)

        return unsubscribe

    async def open_session(
        self, id: str, store: SessionStore | None = None, *, must_exist: bool = False
    ) -> AgentSession:
        """``create_session`` + load: what RPC ``switchSession`` uses. With
        ``must_exist=True`` an id with no entries on the store raises
        ``UnknownNameError`` instead of starting an empty conversation."""
        session = await self.create_session(id, store).load()
        if must_exist and session.leaf_id is None:
            raise UnknownNameError(
                f"unknown session id {id!r}: the store holds no entries for it"
                " (open_session(..., must_exist=False) starts a new one)"
            )
        return session

    async def unfinished_sessions(self, store: SessionStore | None = None) -> list[str]:
        """Ids of the sessions on ``store`` (default: the agent's) whose
        newest durable run did not finish: what a worker resumes after a
        restart (docs/durable.md)."""
        return await unfinished_sessions(store or self.store)

    async def resume_all(
        self,
        store: SessionStore | None = None,
        *,
        session_ids: Sequence[str] | None = None,
        **options: Unpack[RunOptions],
    ) -> ResumeAllReport:
        """Resume every unfinished durable run on ``store`` (or the sessions
        named by ``session_ids``), one after another; a session that fails
        (a damaged checkpoint, a lease another worker holds) is reported in
        ``ResumeAllReport.failed`` and the others still resume."""
        target = store or self.store
        ids = list(session_ids) if session_ids is not None else await unfinished_sessions(target)
        sessions = [self.create_session(sid, target) for sid in ids]
        return await resume_sessions(sessions, self.config.redactor, options)

    def with_provider(
        self,
        provider: Any,
        *,
        model: Mapping[str, Any] | None = None,
        store: SessionStore | None = None,
    ) -> Agent:
        """A copy of this agent whose turns all go to ``provider`` (a mock, in
        tests), sharing nothing mutable: its own tool and middleware
        registries (same definitions), no provider registry, no event
        listeners, and ``store`` or a fresh in-memory store. ``model``
        replaces the agent's model (default: the same)."""
        generate = getattr(provider, "generate", None)
        if provider is None or not callable(generate):
            raise ConfigError("with_provider needs an AIProvider (a generate(request) method)")
        if store is not None and not isinstance(store, SessionStore):
            raise ConfigError("store must implement SessionStore")
        config = self.config
        return Agent(
            replace(
                config,
                provider=provider,
                providers=None,
                model=validate_model(model, "with_provider model") if model else config.model,
                tools=config.tools.copy(),
                middleware=config.middleware.copy() if config.middleware is not None else None,
                metadata=dict(config.metadata),
                store=store,
            )
        )

    async def run(
        self,
        input: str | Message | Sequence[Message],
        *,
        session_id: str | None = None,
        **options: Unpack[RunOptions],
    ) -> RunResult:
        """One run on a session (a new one unless ``session_id`` names one)."""
        return await self.create_session(session_id).run(input, **options)

    def run_sync(
        self,
        input: str | Message | Sequence[Message],
        *,
        session_id: str | None = None,
        **options: Unpack[RunOptions],
    ) -> RunResult:
        """:meth:`run` for scripts and notebooks: see ``AgentSession.run_sync``."""
        return self.create_session(session_id).run_sync(input, **options)


def create_agent(**options: Unpack[AgentOptions]) -> Agent:
    """Validate the configuration once (``ConfigError`` names the bad option)
    and return an :class:`Agent`. The parameters are :class:`AgentOptions`
    (keyword-only; ``model`` and ``provider`` required); docs/runtime.md
    describes each."""
    return Agent(AgentConfig.build(**options))
