"""Credential resolvers: an explicit order of places a secret may come from.

Prism never reads ``os.environ`` itself: a host that wants environment lookup
passes a mapping (``os.environ`` or anything else) to :func:`env_credential`.
Every resolved credential carries the set of secret strings a redactor must
mask; messages of :class:`~prism.errors.CredentialError` never contain them.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

import anyio

from prism.errors import CredentialError
from prism.security.redaction import create_redactor

__all__ = [
    "CallableCredential",
    "CredentialChain",
    "CredentialResolver",
    "CredentialSource",
    "EnvCredential",
    "ExplicitCredential",
    "OAuthCredential",
    "OAuthToken",
    "ResolvedCredential",
    "as_credential_resolver",
    "callable_credential",
    "create_credential_chain",
    "create_oauth_credential",
    "env_credential",
    "explicit_credential",
    "resolve_credential",
]


@dataclass(frozen=True, slots=True)
class ResolvedCredential:
    """A credential value, where it came from, and every secret to redact."""

    value: str
    source: str
    secrets: frozenset[str] = field(default_factory=frozenset)
    expires_at: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.value, str) or not self.value:
            raise CredentialError(f"credential from {self.source} is empty")
        if self.value not in self.secrets:
            object.__setattr__(self, "secrets", self.secrets | {self.value})

    def __repr__(self) -> str:  # the value must not show up in logs or tracebacks
        return f"ResolvedCredential(source={self.source!r}, value=<hidden>)"


@runtime_checkable
class CredentialResolver(Protocol):
    """One place a credential may come from; ``None`` means "not here, try the next"."""

    @property
    def description(self) -> str: ...

    async def resolve(self) -> ResolvedCredential | None: ...


CredentialSource: TypeAlias = "str | CredentialResolver | Sequence[str | CredentialResolver | None]"
"""What APIs accept: an explicit value, one resolver, or an ordered chain."""


class ExplicitCredential:
    """A value the host already holds (``None``/empty falls through)."""

    __slots__ = ("_name", "_value")

    def __init__(self, value: str | None, *, name: str = "explicit value") -> None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"explicit credential must be a string, got {type(value).__name__}")
        self._value = value
        self._name = name

    @property
    def description(self) -> str:
        return self._name

    async def resolve(self) -> ResolvedCredential | None:
        if not self._value:
            return None
        return ResolvedCredential(self._value, self._name)

    def __repr__(self) -> str:
        return f"ExplicitCredential({self._name!r}, set={bool(self._value)})"


class EnvCredential:
    """Looks up names, in order, in a mapping the caller passes (never ``os.environ``
    unless the host passes exactly that)."""

    __slots__ = ("_env", "_names")

    def __init__(self, env: Mapping[str, str] | None, names: Sequence[str]) -> None:
        if isinstance(names, str):
            names = (names,)
        if not names:
            raise ValueError("env_credential needs at least one variable name")
        for name in names:
            if not isinstance(name, str) or not name:
                raise ValueError("env_credential variable names must be non-empty strings")
        self._env = env
        self._names = tuple(names)

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    @property
    def description(self) -> str:
        return "env " + ", ".join(self._names)

    async def resolve(self) -> ResolvedCredential | None:
        if self._env is None:
            return None
        for name in self._names:
            raw = self._env.get(name)
            if raw is None:
                continue
            if not isinstance(raw, str):
                raise CredentialError(f"env {name} is not a string ({type(raw).__name__})")
            value = raw.strip()  # trailing newlines from `.env` files are common
            if value:
                secrets = frozenset({value, raw}) if raw != value else frozenset({value})
                return ResolvedCredential(value, f"env {name}", secrets)
        return None

    def __repr__(self) -> str:
        return f"EnvCredential({self._names!r})"


CredentialFactory: TypeAlias = Callable[[], "str | Awaitable[str | None] | None"]


class CallableCredential:
    """A host function (sync or async) returning the value or ``None``."""

    __slots__ = ("_fn", "_name")

    def __init__(self, fn: CredentialFactory, *, name: str = "callable") -> None:
        if not callable(fn):
            raise TypeError("callable_credential needs a callable")
        self._fn = fn
        self._name = name

    @property
    def description(self) -> str:
        return self._name

    async def resolve(self) -> ResolvedCredential | None:
        failure: str | None = None
        result: object = None
        try:
            result = self._fn()
            if inspect.isawaitable(result):
                result = await result
        except CredentialError:
            raise
        except Exception as exc:
            # The host's message may quote the secret; only the type is safe to show.
            failure = f"credential resolver {self._name!r} failed with {type(exc).__name__}"
        if failure is not None:
            raise CredentialError(failure)  # outside the handler: no __context__ to leak
        if result is None or result == "":
            return None
        if not isinstance(result, str):
            raise CredentialError(
                f"credential resolver {self._name!r} returned {type(result).__name__}, "
                "expected a string or None"
            )
        return ResolvedCredential(result, self._name)


@dataclass(frozen=True, slots=True)
class OAuthToken:
    """An access token with an absolute expiry (epoch seconds; ``None`` = no expiry)."""

    access_token: str
    expires_at: float | None = None
    refresh_token: str | None = None

    def __repr__(self) -> str:
        return f"OAuthToken(expires_at={self.expires_at!r}, access_token=<hidden>)"

    @classmethod
    def from_response(cls, data: Mapping[str, Any], *, now: float) -> OAuthToken:
        """Build from a standard token endpoint response (``expires_in`` relative)."""
        access = data.get("access_token")
        if not isinstance(access, str) or not access:
            raise CredentialError("OAuth token response has no access_token")
        expires_in = data.get("expires_in")
        expires_at: float | None = None
        if expires_in is not None:
            if isinstance(expires_in, bool) or not isinstance(expires_in, int | float):
                raise CredentialError("OAuth token response expires_in is not a number")
            expires_at = now + float(expires_in)
        refresh = data.get("refresh_token")
        return cls(access, expires_at, refresh if isinstance(refresh, str) and refresh else None)

    def secrets(self) -> frozenset[str]:
        return frozenset(s for s in (self.access_token, self.refresh_token) if s)


RefreshFn: TypeAlias = Callable[["OAuthToken | None"], "OAuthToken | Awaitable[OAuthToken]"]


class _Flight:
    """One refresh in progress that concurrent callers wait on."""

    __slots__ = ("done", "error", "token")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.token: OAuthToken | None = None
        self.error: str | None = None


class OAuthCredential:
    """Keeps an OAuth access token fresh.

    The token is refreshed when it is missing, expired, or within
    ``skew_seconds`` of expiry. Refresh is single-flight: callers arriving
    while a refresh runs wait for it and share its outcome (token or error),
    so a burst of requests costs one token-endpoint call.
    """

    def __init__(
        self,
        refresh: RefreshFn,
        *,
        token: OAuthToken | None = None,
        skew_seconds: float = 60.0,
        clock: Callable[[], float] = time.time,
        name: str = "oauth",
    ) -> None:
        if not callable(refresh):
            raise TypeError("create_oauth_credential needs a refresh callable")
        if skew_seconds < 0:
            raise ValueError("skew_seconds must be >= 0")
        self._refresh = refresh
        self._token = token
        self._skew = float(skew_seconds)
        self._clock = clock
        self._name = name
        self._flight: _Flight | None = None
        self._refresh_count = 0
        # Secrets seen so far: old tokens may still appear in late error bodies.
        self._seen: set[str] = set(token.secrets()) if token else set()

    @property
    def description(self) -> str:
        return self._name

    @property
    def refresh_count(self) -> int:
        return self._refresh_count

    @property
    def token(self) -> OAuthToken | None:
        return self._token

    def needs_refresh(self) -> bool:
        token = self._token
        if token is None:
            return True
        if token.expires_at is None:
            return False
        return self._clock() >= token.expires_at - self._skew

    async def get_token(self, *, force: bool = False) -> OAuthToken:
        while True:
            token = self._token
            if token is not None and not force and not self.needs_refresh():
                return token
            flight = self._flight
            if flight is None:
                return await self._lead_refresh(token)
            await flight.done.wait()
            if flight.error is not None:
                raise CredentialError(flight.error)
            if flight.token is not None:
                return flight.token
            # The leader was cancelled before finishing; someone must try again.
            force = False

    async def resolve(self) -> ResolvedCredential:
        token = await self.get_token()
        return ResolvedCredential(
            token.access_token,
            self._name,
            frozenset(self._seen | token.secrets()),
            token.expires_at,
        )

    async def _lead_refresh(self, stale: OAuthToken | None) -> OAuthToken:
        flight = _Flight()
        self._flight = flight
        try:
            self._refresh_count += 1
            result: object = None
            try:
                result = self._refresh(stale)
                if inspect.isawaitable(result):
                    result = await result
            except CredentialError as exc:
                flight.error = self._safe(str(exc))
            except Exception as exc:
                flight.error = self._safe(
                    f"OAuth refresh for {self._name!r} failed with {type(exc).__name__}: {exc}"
                )
            if flight.error is None and (
                not isinstance(result, OAuthToken) or not result.access_token
            ):
                flight.error = f"OAuth refresh for {self._name!r} returned no access token"
            if flight.error is not None:
                # Raised outside the handler so no __context__ carries the raw message.
                raise CredentialError(flight.error)
            assert isinstance(result, OAuthToken)
            self._token = result
            self._seen.update(result.secrets())
            flight.token = result
            return result
        finally:
            self._flight = None
            flight.done.set()

    def _safe(self, message: str) -> str:
        return create_redactor(self._seen).redact_text(message)


class CredentialChain:
    """Tries resolvers in order; the first that yields a value wins."""

    __slots__ = ("_resolvers",)

    def __init__(self, resolvers: Sequence[str | CredentialResolver | None]) -> None:
        self._resolvers = tuple(_as_resolver(r) for r in resolvers if r is not None)

    @property
    def resolvers(self) -> tuple[CredentialResolver, ...]:
        return self._resolvers

    @property
    def description(self) -> str:
        return " -> ".join(r.description for r in self._resolvers) or "empty chain"

    async def resolve(self) -> ResolvedCredential | None:
        for resolver in self._resolvers:
            found = await resolver.resolve()
            if found is not None:
                return found
        return None


def _as_resolver(item: str | CredentialResolver) -> CredentialResolver:
    if isinstance(item, str):
        return ExplicitCredential(item)
    if isinstance(item, CredentialResolver):
        return item
    raise TypeError(
        f"not a credential resolver: {type(item).__name__} "
        "(pass a string, a resolver, or a list of them)"
    )


def explicit_credential(value: str | None, *, name: str = "explicit value") -> ExplicitCredential:
    return ExplicitCredential(value, name=name)


def env_credential(env: Mapping[str, str] | None, *names: str) -> EnvCredential:
    return EnvCredential(env, names)


def callable_credential(fn: CredentialFactory, *, name: str = "callable") -> CallableCredential:
    return CallableCredential(fn, name=name)


def create_oauth_credential(
    refresh: RefreshFn,
    *,
    token: OAuthToken | None = None,
    skew_seconds: float = 60.0,
    clock: Callable[[], float] = time.time,
    name: str = "oauth",
) -> OAuthCredential:
    return OAuthCredential(refresh, token=token, skew_seconds=skew_seconds, clock=clock, name=name)


def create_credential_chain(*resolvers: str | CredentialResolver | None) -> CredentialChain:
    return CredentialChain(resolvers)


def as_credential_resolver(source: CredentialSource) -> CredentialResolver:
    """Normalize what an API accepted (value, resolver or list) into one resolver."""
    if isinstance(source, str | CredentialResolver):
        return _as_resolver(source)
    if isinstance(source, Sequence):
        return CredentialChain(source)
    raise TypeError(f"not a credential source: {type(source).__name__}")


async def resolve_credential(
    chain: CredentialSource, *, name: str = "credential"
) -> ResolvedCredential:
    """Resolve ``chain`` or raise :class:`CredentialError` naming what was tried."""
    resolver = as_credential_resolver(chain)
    found = await resolver.resolve()
    if found is None:
        raise CredentialError(f"no credential for {name!r}: tried {resolver.description}")
    return found
