"""Settings: defaults, the ``observational-memory`` settings key, overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from prism._json_fields import camel_case, json_keys, read_json_fields
from prism.errors import SettingsError

SETTINGS_KEY = "observational-memory"


@dataclass(frozen=True, slots=True)
class ObservationalMemorySettings:
    """When the workers and the fast compaction act (token counts are Prism's
    chars/4 estimates).

    - ``observe_after_tokens``: the post-run gate runs the observer once the
      branch holds this many unobserved tokens.
    - ``reflect_after_tokens``: ... the reflector once unreflected
      observations hold this many tokens.
    - ``compact_after_tokens``: ... compacts the session with the memory
      strategy once its provider context holds this many tokens.
    - ``observations_pool_max_tokens``: above this, the strategy folds the
      visible observations down to ``observations_pool_target_tokens`` (a
      full fold), and the dropper is asked to prune toward the target.
    - ``agent_max_turns``: provider turns each worker may take.
    - ``passive``: the post-run gate does nothing; only ``flush()`` runs workers.
    - ``debug_log``: the runtime keeps a short, redacted log of worker steps.
    """

    observe_after_tokens: int = 10_000
    reflect_after_tokens: int = 20_000
    compact_after_tokens: int = 81_000
    observations_pool_max_tokens: int = 20_000
    observations_pool_target_tokens: int = 10_000
    agent_max_turns: int = 16
    passive: bool = False
    debug_log: bool = False

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if item.type in ("bool", bool):
                if not isinstance(value, bool):
                    raise SettingsError(
                        f"observational memory setting {camel_case(item.name)} must be a boolean"
                    )
            elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SettingsError(
                    f"observational memory setting {camel_case(item.name)} must be an integer >= 1"
                )
        if self.observations_pool_target_tokens > self.observations_pool_max_tokens:
            raise SettingsError(
                "observational memory setting observationsPoolTargetTokens must not exceed "
                "observationsPoolMaxTokens"
            )

    def to_json(self) -> dict[str, Any]:
        return {camel_case(item.name): getattr(self, item.name) for item in fields(self)}


def _read(source: object) -> dict[str, Any]:
    """The ``observational-memory`` object of a SettingsProvider or mapping."""
    if source is None:
        return {}
    if isinstance(source, Mapping):
        value = source.get(SETTINGS_KEY, {})
    elif callable(getattr(source, "get", None)) and callable(getattr(source, "has", None)):
        provider: Any = source
        value = provider.get(SETTINGS_KEY, {}) if provider.has(SETTINGS_KEY) else {}
    else:
        raise SettingsError("settings must be a SettingsProvider or a mapping")
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SettingsError(f"setting {SETTINGS_KEY!r} must be an object")
    return dict(value)


def _apply(into: dict[str, Any], values: Mapping[str, Any], where: str) -> None:
    # camelCase (the wire) or snake_case (Python) keys, read the one way every
    # options class reads them (prism._json_fields).
    found = read_json_fields(ObservationalMemorySettings, values, snake_case=True)
    for kind, key in found.problems:
        if kind == "unknown":
            expected = sorted(json_keys(ObservationalMemorySettings))
            raise SettingsError(f"unknown {where} key {key!r}; expected one of {expected}")
        raise SettingsError(f"{where} key {key!r} is given twice (camelCase and snake_case)")
    into.update(found.values)


def resolve_observational_memory_settings(
    settings: object = None, overrides: Mapping[str, Any] | None = None
) -> ObservationalMemorySettings:
    """Defaults, then the ``observational-memory`` object of ``settings`` (a
    ``SettingsProvider`` or a plain mapping; camelCase or snake_case keys),
    then ``overrides``. Unknown keys and wrong types raise ``SettingsError``
    naming the key, never echoing values."""
    merged: dict[str, Any] = {}
    _apply(merged, _read(settings), f"{SETTINGS_KEY!r} setting")
    if overrides is not None:
        if not isinstance(overrides, Mapping):
            raise SettingsError("observational memory overrides must be a mapping")
        _apply(merged, overrides, "observational memory override")
    return ObservationalMemorySettings(**merged)
