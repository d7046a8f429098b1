"""The one rule for turning what a caller passes as options into an options
object (retry, compaction, LLM compaction, attention compiler).

What a caller may pass for an options parameter (:func:`coerce_options`):

- ``None`` or ``False``: off (``None``);
- ``True``: the class's defaults;
- an instance of the class: as it is;
- a mapping: the class's ``from_json``, which reads it with
  :func:`options_from_mapping`;
- anything else: the error names the option and the type that came.

What a mapping's keys may be (:func:`options_from_mapping`): each field's
camelCase wire key (``maxAttempts``, the original's spelling, what config
files and RPC send) or, for Python callers, the field's own snake_case name,
which also reaches fields JSON cannot carry (a policy object, a provider).
The first problem in key order is the error: a key that names no field
(``unknown retry option 'maxAttempt'; expected one of [...]``) or a field
given under both spellings (``retry option 'max_attempts' given twice``).
Values are checked by the class itself (its ``__post_init__``), so a wrong
type names the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from prism._json_fields import json_keys, read_json_fields
from prism.errors import ConfigError

__all__ = ["coerce_options", "options_from_mapping"]


class _OptionsClass(Protocol):
    def __init__(self) -> None: ...

    @classmethod
    def from_json(cls, data: Mapping[str, Any], /) -> Any: ...


OptionsT = TypeVar("OptionsT", bound=_OptionsClass)


def coerce_options(
    value: object,
    cls: type[OptionsT],
    *,
    what: str,
    error: type[Exception] = ConfigError,
) -> OptionsT | None:
    """``value`` by the rule above; ``what`` names the parameter in errors."""
    if value is None or value is False:
        return None
    if value is True:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        options: OptionsT = cls.from_json(value)
        return options
    raise error(
        f"{what} must be {cls.__name__}, a mapping, True, False or None, got {type(value).__name__}"
    )


def options_from_mapping(
    cls: type, data: object, *, what: str, error: type[Exception] = ConfigError
) -> dict[str, Any]:
    """``cls``'s constructor arguments from ``data`` by the rule above."""
    if not isinstance(data, Mapping):
        raise error(f"{what} options must be an object, got {type(data).__name__}")
    found = read_json_fields(cls, data, snake_case=True)
    for problem, key in found.problems[:1]:
        if problem == "unknown":
            raise error(f"unknown {what} option {key!r}; expected one of {sorted(json_keys(cls))}")
        raise error(f"{what} option {key!r} given twice (camelCase and snake_case)")
    return found.values
