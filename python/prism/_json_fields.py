"""One way to read option dataclasses from their camelCase JSON form.

A config file, an RPC request or a session checkpoint spells options the way
the original does (``maxAttempts``); the Python dataclass spells them
``max_attempts``. Instead of a hand-written key table per class, the wire key
of every init field is its name in camelCase, and the field's metadata says
what differs:

- ``metadata=NOT_JSON``: JSON cannot carry it (an object or a callable, such
  as a retry policy or a provider); its key is refused in JSON.
- ``metadata={"from_json": fn}``: ``fn(value)`` coerces the JSON value first
  (for example a list into a tuple, or nested camelCase keys).

Each options class keeps its own error wording; this module only reports
unknown and repeated keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

__all__ = [
    "NOT_JSON",
    "JsonFields",
    "camel_case",
    "json_keys",
    "read_json_fields",
    "write_json_fields",
]

NOT_JSON: Final[Mapping[str, Any]] = {"json": False}


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# Per class, computed once: options are read on every agent and run creation.
_KEYS: dict[type, dict[str, str]] = {}
_FIELDS: dict[type, dict[str, dataclasses.Field[Any]]] = {}


def json_keys(cls: type) -> dict[str, str]:
    """``camelKey -> field name`` for every init field JSON can carry, in
    field order."""
    keys = _KEYS.get(cls)
    if keys is None:
        keys = _KEYS[cls] = {
            camel_case(f.name): f.name
            for f in dataclasses.fields(cls)
            if f.init and f.metadata.get("json", True)
        }
    return keys


def _init_fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = {f.name: f for f in dataclasses.fields(cls) if f.init}
    return fields


@dataclasses.dataclass(slots=True)
class JsonFields:
    """What :func:`read_json_fields` found: constructor keyword arguments and,
    in key order, each key that names no field (``"unknown"``) or a field
    already given under its other spelling (``"repeated"``)."""

    values: dict[str, Any]
    problems: list[tuple[Literal["unknown", "repeated"], Any]]

    @property
    def unknown(self) -> list[Any]:
        return [key for kind, key in self.problems if kind == "unknown"]


def read_json_fields(cls: type, data: Mapping[Any, Any], *, snake_case: bool) -> JsonFields:
    """Map ``data``'s keys to ``cls``'s fields and coerce their values.

    With ``snake_case`` a Python caller may also use the field names
    themselves, including fields JSON cannot carry (they are objects a caller
    passes, never a wire value).
    """
    keys = json_keys(cls)
    fields = _init_fields(cls)
    values: dict[str, Any] = {}
    problems: list[tuple[Literal["unknown", "repeated"], Any]] = []
    for key, value in data.items():
        name = keys.get(key) if isinstance(key, str) else None
        if name is None and snake_case and isinstance(key, str) and key in fields:
            name = key
        if name is None:
            problems.append(("unknown", key))
            continue
        if name in values:
            problems.append(("repeated", key))
            continue
        coerce: Callable[[Any], Any] | None = fields[name].metadata.get("from_json")
        values[name] = coerce(value) if coerce is not None else value
    return JsonFields(values, problems)


def write_json_fields(obj: object, *names: str) -> dict[str, Any]:
    """``{camelKey: value}`` for the named attributes of ``obj``, in the
    order given: the writing side of the camelCase rule, for result shapes
    whose wire keys are their field names (values are taken as they are)."""
    return {camel_case(name): getattr(obj, name) for name in names}
