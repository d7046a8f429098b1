"""Prism's loggers: one per layer, silent until a host (or ``prism --verbose``)
turns them on.

Every record goes through the standard :mod:`logging` module under the
``prism`` root, which carries a ``NullHandler`` (set in ``prism/__init__``),
so a library user sees nothing unless they configure logging. The layers:

==================  ====================================================
``prism.runtime``   runs, turns, retries, tool calls (the agent's events,
                    already redacted with the agent's redactor)
``prism.providers`` the request as sent and the response as received,
                    redacted with the provider's credentials and secrets
``prism.stores``    appends, quarantined lines
``prism.cli``       the command line's own decisions
==================  ====================================================

Records are redacted where they are made; :func:`enable_logging` can add a
second redactor on its handler (the CLI passes the agent's), so a secret
that only the agent knows is masked in provider records too.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from collections.abc import Mapping

    from prism.security.redaction import SecretRedactor


class TextRedactor(Protocol):
    """What a log handler needs of a redactor (a ``SecretRedactor`` is one)."""

    def redact_text(self, text: str) -> str: ...


ROOT = "prism"
LAYERS: tuple[str, ...] = ("prism.runtime", "prism.providers", "prism.stores", "prism.cli")
# Values of these headers are never logged, even partly.
SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})
_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


class RedactingFilter(logging.Filter):
    """Masks ``redactor``'s secrets in a record's final message (its
    arguments are merged in first, so a secret cannot hide in an argument)."""

    def __init__(self, redactor: TextRedactor) -> None:
        super().__init__()
        self._redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg = self._redactor.redact_text(message)
        record.args = None
        if record.exc_info is not None:
            # A traceback is text a secret can hide in; keep the type only.
            kind = record.exc_info[0]
            record.msg += f" ({kind.__name__ if kind else 'exception'})"
            record.exc_info = None
            record.exc_text = None
        return True


def enable_logging(
    level: int = logging.DEBUG,
    *,
    redactor: TextRedactor,
    stream: TextIO | None = None,
) -> logging.Handler:
    """Print Prism's records at ``level`` or above to ``stream`` (stderr by
    default); returns the handler, which :func:`disable_logging` removes.
    ``redactor`` (required, usually ``agent.config.redactor``) masks its
    secrets in every record this handler prints."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.setLevel(level)
    handler.addFilter(RedactingFilter(redactor))
    root = logging.getLogger(ROOT)
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)
    return handler


def disable_logging(handler: logging.Handler) -> None:
    """Undo :func:`enable_logging` (the level stays as it was set)."""
    logging.getLogger(ROOT).removeHandler(handler)


def masked_headers(headers: Mapping[str, str], redactor: SecretRedactor) -> dict[str, str]:
    """Headers fit for a log: credential headers masked whole, the rest redacted."""
    return {
        name: "<redacted>" if name.lower() in SECRET_HEADERS else redactor.redact_text(value)
        for name, value in headers.items()
    }


def log_request(
    logger: logging.Logger,
    provider: str,
    url: str,
    headers: Mapping[str, str],
    body: Any,
    redactor: SecretRedactor,
) -> None:
    """The request as it is sent, at DEBUG (nothing is built when off)."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str)
    logger.debug(
        "%s: POST %s headers=%s body=%s",
        provider,
        url,
        json.dumps(masked_headers(headers, redactor)),
        redactor.redact_text(text),
    )


def log_response_status(
    logger: logging.Logger, provider: str, status: int, content_type: str
) -> None:
    logger.debug("%s: response %d %s", provider, status, content_type or "(no content-type)")


def log_response_data(
    logger: logging.Logger, provider: str, data: str, redactor: SecretRedactor
) -> None:
    """One server-sent event's data as received, at DEBUG."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s: data %s", provider, redactor.redact_text(data))


__all__ = [
    "LAYERS",
    "RedactingFilter",
    "TextRedactor",
    "disable_logging",
    "enable_logging",
    "log_request",
    "log_response_data",
    "log_response_status",
    "masked_headers",
]
