"""JSON-schema checks shared by tools and commands.

jsonschema is imported on first use: most processes (the CLI among them)
never validate a schema, and the import costs tens of milliseconds.
Violation messages name the location and the rule, never the offending
value: arguments may carry secrets, and these messages reach events, the
model and logs.

Everything that could fail later is checked when the schema is compiled:
every ``$ref`` must resolve (a dangling one used to end a run with a raw
jsonschema exception at the first call), and every ``pattern`` /
``patternProperties`` regex must compile for the native linear-time
matcher. Arguments come from a model, so a pattern with catastrophic
backtracking (``^(a+)+$``) must not run on Python's backtracking ``re``:
the validator's ``pattern``, ``patternProperties`` and
``additionalProperties`` keywords match with ``prism._native.pattern_search``
(the Rust ``regex`` crate), which has no backreferences or lookaround.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
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
    _check_refs_and_patterns(checked, owner)
    validator: Validator = _linear_validator()(checked)
    return validator


# Keywords whose values are instance data, not subschemas: a "pattern" or
# "$ref" key inside them is a value, never a rule.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _check_refs_and_patterns(schema: Mapping[str, Any], owner: str) -> None:
    """Walk every object that may be a subschema (an iterative walk, so depth
    costs no recursion), resolving ``$ref`` against the nearest ``$id``."""
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    root = DRAFT202012.create_resource(schema)
    base = root.id() or ""
    registry = Registry().with_resource(base, root).crawl()  # embedded $id's too
    stack: list[tuple[Any, tuple[str, ...], Any]] = [(schema, (), registry.resolver(base))]
    while stack:
        node, path, resolver = stack.pop()
        if isinstance(node, list):
            stack.extend((item, (*path, str(i)), resolver) for i, item in enumerate(node))
            continue
        if not isinstance(node, Mapping):
            continue
        if path and isinstance(node.get("$id"), str):
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        _check_node(node, "/".join(path) or "(root)", resolver, owner)
        for key, value in node.items():
            if key not in _DATA_KEYWORDS and isinstance(value, Mapping | list):
                stack.append((value, (*path, str(key)), resolver))


def _check_node(node: Mapping[str, Any], where: str, resolver: Any, owner: str) -> None:
    from referencing.exceptions import Unresolvable

    from prism._native import pattern_search

    ref = node.get("$ref")
    if isinstance(ref, str):
        try:
            resolver.lookup(ref)
        except Unresolvable:
            raise ConfigError(
                f"{owner}: parameters has a $ref that cannot be resolved at {where}: {ref!r}"
                " (refer to a definition inside the schema, e.g. '#/$defs/name')"
            ) from None
    patterns = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
    pattern_properties = node.get("patternProperties")
    if isinstance(pattern_properties, Mapping):
        patterns.extend(str(key) for key in pattern_properties)
    for pattern in patterns:
        try:
            pattern_search(pattern, "")
        except ValueError as error:
            raise ConfigError(
                f"{owner}: parameters pattern {pattern!r} at {where} is not supported by the "
                f"linear-time matcher: {error} (backreferences and lookaround are not "
                "supported; see docs/native.md)"
            ) from None


@functools.cache
def _linear_validator() -> Any:
    """Draft 2020-12 with the regex keywords on the native linear-time matcher."""
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import ValidationError

    from prism._native import pattern_search

    def pattern(validator: Any, regex: str, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not pattern_search(regex, instance):
            yield ValidationError(f"does not match {regex!r}")

    def pattern_properties(
        validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for regex, subschema in patterns.items():
            for key, value in instance.items():
                if pattern_search(regex, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=regex)

    def additional_properties(
        validator: Any, additional: Any, instance: Any, schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        properties = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extras = [
            key
            for key in instance
            if key not in properties and not any(pattern_search(p, key) for p in patterns)
        ]
        if validator.is_type(additional, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], additional, path=extra)
        elif not additional and extras:
            yield ValidationError(f"{len(extras)} additional propert(ies) not allowed")

    extend: Any = validators.extend  # untyped in jsonschema
    return extend(
        Draft202012Validator,
        {
            "pattern": pattern,
            "patternProperties": pattern_properties,
            "additionalProperties": additional_properties,
        },
    )


def schema_violation(validator: Validator, value: Mapping[str, Any]) -> str | None:
    """``None`` when ``value`` matches, else ``"<location> fails <rule> <rule value>"``."""
    from jsonschema.exceptions import best_match

    try:
        error = best_match(validator.iter_errors(value))
    except Exception as failure:  # e.g. a reference only a given instance reaches
        # The call is refused, never the run ended by a raw jsonschema error.
        return f"args could not be checked against the schema ({type(failure).__name__})"
    if error is None:
        return None
    location = "args" + "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path
    )
    rule = json.dumps(error.validator_value, default=str)
    if len(rule) > 120:
        rule = rule[:117] + "..."
    return f"{location} fails {error.validator!r} {rule}"
