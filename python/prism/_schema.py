"""JSON-schema checks shared by tools and commands.

jsonschema is imported on first use: most processes (the CLI among them)
never validate a schema, and the import costs tens of milliseconds.
Violation messages name the location and the rule, never the offending
value: arguments may carry secrets, and these messages reach events, the
model and logs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from prism.errors import ConfigError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


def compile_schema(schema: object, owner: str) -> Validator:
    """A draft 2020-12 validator for ``schema``; ``ConfigError`` names ``owner``
    and where the schema itself is broken."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, Mapping):
        raise ConfigError(f"{owner}: parameters must be a JSON schema object")
    checked = dict(schema)
    try:
        Draft202012Validator.check_schema(checked)
    except SchemaError as error:
        where = "/".join(str(part) for part in error.path) or "(root)"
        raise ConfigError(f"{owner}: parameters is not a valid JSON schema at {where}") from None
    return Draft202012Validator(checked)


def schema_violation(validator: Validator, value: Mapping[str, Any]) -> str | None:
    """``None`` when ``value`` matches, else ``"<location> fails <rule> <rule value>"``."""
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(value))
    if error is None:
        return None
    location = "args" + "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path
    )
    rule = json.dumps(error.validator_value, default=str)
    if len(rule) > 120:
        rule = rule[:117] + "..."
    return f"{location} fails {error.validator!r} {rule}"
