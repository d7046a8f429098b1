"""In-memory config layers merged in order.

``merge_config_layers`` deep-merges objects key by key, later layers winning;
arrays and scalars from a later layer replace earlier ones whole. The result
is a fresh structure: no input layer is mutated, and editing the result never
reaches back into a layer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from prism.config._json import copy_json, describe_type, require_json
from prism.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ConfigLayer:
    """A named JSON object (``"defaults"``, ``"user"``, ``"project"``, ``"runtime"``)."""

    name: str
    data: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError("config layer name must be a non-empty string")
        if not isinstance(self.data, dict):
            raise ConfigError(
                f"config layer {self.name!r} must be a JSON object, got {describe_type(self.data)}"
            )
        require_json(self.data, f"config layer {self.name!r}")

    @classmethod
    def from_json(cls, value: Any) -> ConfigLayer:
        """``{"name": ..., "data": {...}}``."""
        if not isinstance(value, dict):
            raise ConfigError(f"a config layer must be an object, got {describe_type(value)}")
        unknown = sorted(set(value) - {"name", "data"})
        if unknown:
            raise ConfigError(f"config layer has unknown keys: {', '.join(unknown)}")
        return cls(name=value.get("name"), data=value.get("data"))  # type: ignore[arg-type]


def _merge_into(target: dict[str, Any], source: Mapping[str, Any]) -> None:
    for key, value in source.items():
        current = target.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _merge_into(current, value)
        else:
            target[key] = copy_json(value)


def merge_config_layers(layers: Iterable[ConfigLayer | Mapping[str, Any]]) -> dict[str, Any]:
    """Merge ``layers`` in order into a new dict. Plain ``{"name", "data"}``
    mappings are accepted too. Every layer is validated before merging, so a
    bad layer fails the call without a partial result."""
    if isinstance(layers, (str, bytes, Mapping)):
        raise ConfigError("merge_config_layers takes a list of layers")
    checked: list[ConfigLayer] = []
    for index, layer in enumerate(layers):
        if isinstance(layer, ConfigLayer):
            checked.append(layer)
        elif isinstance(layer, Mapping):
            try:
                checked.append(ConfigLayer.from_json(dict(layer)))
            except ConfigError as error:
                raise ConfigError(f"config layer #{index}: {error}") from None
        else:
            raise ConfigError(f"config layer #{index} is {describe_type(layer)}, not a ConfigLayer")
    merged: dict[str, Any] = {}
    for layer in checked:
        _merge_into(merged, layer.data)
    return merged
