"""Turning psycopg failures into ``StoreError``s that never leak credentials.

The messages are written here, not copied from psycopg: a libpq connection
error can quote the host and user, and a DSN passed by mistake where a host
was expected would be echoed back whole. Each message names the server by a
``target`` label (``host:port/dbname``, built from the parsed connection
string without user or password) and what went wrong; as a last line of
defence every message is scrubbed of the password and of the DSN text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import PoolTimeout

from prism.errors import StoreError

_SECRET_KEYS = ("password", "sslpassword")


class ConnInfo:
    """A parsed connection string: the libpq text (kept private), a printable
    ``target`` and the secrets to scrub from any message."""

    def __init__(self, dsn: str | None, extra: dict[str, Any] | None = None) -> None:
        self._dsn = dsn or ""
        try:
            params = conninfo_to_dict(self._dsn, **(extra or {}))
        except psycopg.ProgrammingError:
            # The parse error itself can quote the DSN: say only that it is bad.
            raise StoreError(
                "the PostgreSQL connection string could not be parsed "
                "(expected 'key=value ...' or a postgresql:// URL)"
            ) from None
        _refuse_pasted_dsn(params)
        self.params = params
        host = str(params.get("host") or params.get("hostaddr") or "localhost")
        port = str(params.get("port") or "5432")
        dbname = str(params.get("dbname") or params.get("user") or "")
        self.user = str(params.get("user") or "")
        self.target = f"{host}:{port}/{dbname}"
        self.secrets = tuple(
            s for s in (*(str(params.get(k) or "") for k in _SECRET_KEYS), self._dsn) if s
        )

    @property
    def dsn(self) -> str:
        return self._dsn

    def scrub(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text


def _refuse_pasted_dsn(params: dict[str, Any]) -> None:
    """A connection URL or DSN pasted where a host name belongs would be
    echoed whole (password included) by libpq's "could not translate host
    name" error and by the pool's log of failed attempts: refuse it before
    any connection attempt, without quoting it."""
    for key in ("host", "hostaddr", "port"):
        value = str(params.get(key) or "")
        if "://" in value or "@" in value or any(c in value for c in " \t\r\n="):
            raise StoreError(
                f"the PostgreSQL connection parameter {key!r} holds a connection string or "
                "URL (it contains '://', '@', '=' or whitespace); pass the URL or the "
                "key=value string itself as dsn=, not as the value of one key"
            )


def _connect_reason(exc: BaseException) -> str:
    """A short cause for a failed connection attempt, without the libpq text."""
    sqlstate = getattr(exc, "sqlstate", None)
    text = str(exc).lower()
    if sqlstate in ("28P01", "28000") or "password authentication failed" in text:
        return "authentication failed (wrong user or password)"
    if "no password supplied" in text or "password is required" in text:
        return "authentication failed (the server wants a password and none was given)"
    if sqlstate == "3D000" or ("database" in text and "does not exist" in text):
        return "the database does not exist"
    if sqlstate in ("57P03",) or "the database system is starting up" in text:
        return "the server is starting up or shutting down"
    if "too many" in text and "connections" in text:
        return "the server has too many connections"
    if "connection refused" in text:
        return "connection refused (is the server running and listening there?)"
    if "timeout" in text or "timed out" in text:
        return "connection timed out"
    if "could not translate host name" in text or "name or service not known" in text:
        return "unknown host name"
    if "no such file or directory" in text:
        return "no server socket at that path (is the server running?)"
    return "could not connect"


def connect_error(info: ConnInfo, exc: BaseException | None, waited: float) -> StoreError:
    reason = _connect_reason(exc) if exc is not None else "no connection became available"
    return StoreError(
        info.scrub(
            f"PostgreSQL session store: cannot connect to {info.target}"
            f"{f' as {info.user!r}' if info.user and 'authentication' in reason else ''}: "
            f"{reason} (waited {waited:g}s)"
        ),
        code="store_unavailable",
    )


def operation_error(
    info: ConnInfo, exc: BaseException, action: str, *, written: str = "nothing was written"
) -> StoreError:
    """A failure while running ``action`` (``append``, ``list``, ...)."""
    return StoreError(
        info.scrub(
            f"PostgreSQL session store: {action} on {info.target} failed: "
            f"{_operation_reason(exc)}; {written}"
        ),
        code="store_error",
    )


def _operation_reason(exc: BaseException) -> str:
    """What went wrong, by SQLSTATE class: only a lost connection is called
    one (a limit, a full disk or a bad value is the server answering)."""
    if isinstance(exc, pg_errors.QueryCanceled):
        return "statement timeout: the server cancelled the statement"
    if isinstance(exc, (pg_errors.AdminShutdown, pg_errors.CrashShutdown)):
        return "the server closed the connection (terminated or shutting down)"
    if isinstance(exc, pg_errors.LockNotAvailable):
        return "lock timeout"
    if isinstance(exc, pg_errors.SerializationFailure | pg_errors.DeadlockDetected):
        return "the transaction was aborted by a conflict with another one"
    if isinstance(exc, pg_errors.UndefinedTable):
        return "a prism table is missing (was the schema dropped?)"
    if is_connection_failure(exc):
        return "the connection to the server was lost"
    if not isinstance(exc, psycopg.Error):
        return type(exc).__name__
    primary = (exc.diag.message_primary if exc.diag else None) or "database error"
    sqlstate = exc.sqlstate or ""
    if sqlstate.startswith("54"):
        return f"a PostgreSQL limit was exceeded ({primary})"
    if sqlstate.startswith("53"):
        return f"the server is out of resources ({primary})"
    return f"{type(exc).__name__}: {primary}"


def is_connection_failure(exc: BaseException) -> bool:
    """True for a connection that failed or was cut, where the outcome of a
    statement can be unknown; false for every error the server answered."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    sqlstate = exc.sqlstate
    # No SQLSTATE: libpq itself reports the connection failed; class 08 is
    # "connection exception"; 57P01-57P03: the server ended the session.
    return sqlstate is None or sqlstate.startswith("08") or sqlstate in _SESSION_ENDED


_SESSION_ENDED = frozenset({"57P01", "57P02", "57P03"})


def first_existing(batch_ids: Iterable[str], existing: set[str]) -> str | None:
    for entry_id in batch_ids:
        if entry_id in existing:
            return entry_id
    return None
