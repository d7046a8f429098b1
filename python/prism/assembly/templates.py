"""``{{name}}`` prompt templates: plain substitution, nothing more.

There are no expressions, filters, loops, attribute or item access: a
placeholder is looked up as a key of the caller's mapping and nothing else, so
``{{__class__}}`` is just a variable name that is usually missing, and
``{{a.b}}`` is not a placeholder at all (it stays in the text). Substitution is
a single pass, so a value that itself contains ``{{x}}`` is never expanded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from prism.errors import ConfigError

MissingPolicy = Literal["throw", "preserve"]
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def stringify_template_value(name: str, value: Any) -> str:
    """Strings verbatim; other JSON values as compact JSON with sorted keys."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError):
        raise ConfigError(
            f"template variable {name!r} is not JSON-compatible ({type(value).__name__})",
            code="template_error",
        ) from None


def render_prompt_template(
    template: str, variables: Mapping[str, Any] | None = None, *, missing: MissingPolicy = "throw"
) -> str:
    """Replace each ``{{name}}`` with ``variables[name]``.

    ``missing="throw"`` (default) raises :class:`~prism.errors.ConfigError`
    naming the first missing variable; ``"preserve"`` leaves the placeholder
    as written.
    """
    if not isinstance(template, str):
        raise ConfigError(
            f"template must be a string, got {type(template).__name__}", code="template_error"
        )
    if missing not in ("throw", "preserve"):
        raise ConfigError(
            f"missing must be 'throw' or 'preserve', got {missing!r}", code="template_error"
        )
    if variables is None:
        variables = {}
    if not isinstance(variables, Mapping):
        raise ConfigError(
            f"template variables must be a mapping, got {type(variables).__name__}",
            code="template_error",
        )

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        # dict-style lookup only: never getattr, so dunder names cannot reach objects.
        if name not in variables:
            if missing == "preserve":
                return match.group(0)
            raise ConfigError(
                f"template variable {name!r} is missing", code="template_variable_missing"
            )
        return stringify_template_value(name, variables[name])

    return _PLACEHOLDER.sub(substitute, template)


def template_variables(template: str) -> list[str]:
    """The distinct placeholder names in ``template``, in first-use order."""
    return list(dict.fromkeys(match.group(1) for match in _PLACEHOLDER.finditer(template)))
