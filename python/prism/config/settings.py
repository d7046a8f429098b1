"""Settings providers: read-only, host-owned access to configuration values.

A ``SettingsProvider`` answers ``get``/``has``/``keys``. Keys may be dotted
paths into nested objects (``"observational-memory.observeAfterTokens"``).
Settings a host marks secret are returned by ``get`` like any other value,
but their values never appear in errors, ``repr`` or ``to_public_dict()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

from prism.config._json import copy_json, describe_type, require_json
from prism.errors import SettingsError

T = TypeVar("T")
SECRET_MASK = "[REDACTED]"
_MISSING: Any = object()


@runtime_checkable
class SettingsProvider(Protocol):
    def get(self, key: str, default: Any = None) -> Any: ...

    def has(self, key: str) -> bool: ...

    def keys(self) -> list[str]: ...


def _split(key: str) -> list[str]:
    if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
        raise SettingsError("a setting key must be a non-empty string of dot-separated parts")
    return key.split(".")


class DictSettingsProvider:
    """Settings backed by a JSON object (for example a merged config).

    The data is copied at construction, so later edits to the source do not
    change settings. ``secret_keys`` are dotted keys whose values (and every
    value nested under them) are masked in ``to_public_dict`` and ``repr``.
    """

    def __init__(self, data: Mapping[str, Any], *, secret_keys: Iterable[str] = ()) -> None:
        if not isinstance(data, Mapping):
            raise SettingsError(f"settings must be a JSON object, got {describe_type(data)}")
        plain = dict(data)
        require_json(plain, "settings")
        self._data: dict[str, Any] = copy_json(plain)
        if isinstance(secret_keys, str):
            raise SettingsError("secret_keys must be a list of keys, not a single string")
        self._secret_keys = frozenset(secret_keys)
        for key in self._secret_keys:
            _split(key)

    def _lookup(self, key: str) -> Any:
        node: Any = self._data
        for part in _split(key):
            if not isinstance(node, dict) or part not in node:
                return _MISSING
            node = node[part]
        return node

    def is_secret(self, key: str) -> bool:
        parts = _split(key)
        return any(".".join(parts[: i + 1]) in self._secret_keys for i in range(len(parts)))

    def get(self, key: str, default: Any = None) -> Any:
        value = self._lookup(key)
        return default if value is _MISSING else copy_json(value)

    def has(self, key: str) -> bool:
        return self._lookup(key) is not _MISSING

    def keys(self) -> list[str]:
        return list(self._data)

    def require(self, key: str, expected: type[T] | tuple[type, ...] | None = None) -> Any:
        """The value at ``key``; ``SettingsError`` when missing or of the wrong
        type. The error names the key and types, never the value."""
        value = self._lookup(key)
        if value is _MISSING:
            raise SettingsError(f"setting {key!r} is missing")
        if expected is not None:
            wanted = expected if isinstance(expected, tuple) else (expected,)
            # JSON does not tell 1 from 1.0, so an int is a valid float.
            kinds = (*wanted, int) if float in wanted else wanted
            # bool is an int in Python but not a number in settings.
            wrong_bool = isinstance(value, bool) and bool not in wanted
            if wrong_bool or not isinstance(value, kinds):
                names = " or ".join(t.__name__ for t in wanted)
                raise SettingsError(f"setting {key!r} must be {names}, got {describe_type(value)}")
        return copy_json(value)

    def get_str(self, key: str, default: str | None = None) -> str | None:
        return self.require(key, str) if self.has(key) else default

    def get_int(self, key: str, default: int | None = None) -> int | None:
        return self.require(key, int) if self.has(key) else default

    def get_bool(self, key: str, default: bool | None = None) -> bool | None:
        return self.require(key, bool) if self.has(key) else default

    def section(self, key: str) -> DictSettingsProvider:
        """A provider over the object at ``key`` (empty when missing), keeping
        the secret marks that fall inside it."""
        value = self._lookup(key)
        if value is _MISSING:
            value = {}
        if not isinstance(value, dict):
            raise SettingsError(f"setting {key!r} must be an object, got {describe_type(value)}")
        prefix = key + "."
        inner = [k[len(prefix) :] for k in self._secret_keys if k.startswith(prefix)]
        if self.is_secret(key):
            inner = list(value)
        return DictSettingsProvider(value, secret_keys=inner)

    def to_public_dict(self) -> dict[str, Any]:
        """A copy safe to log or show: secret values replaced by a mask."""
        return self._mask(self._data, "")

    def _mask(self, node: dict[str, Any], prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            path = f"{prefix}{key}"
            if path in self._secret_keys:
                out[key] = SECRET_MASK
            elif isinstance(value, dict):
                out[key] = self._mask(value, path + ".")
            else:
                out[key] = copy_json(value)
        return out

    def __repr__(self) -> str:
        return f"DictSettingsProvider({self.to_public_dict()!r})"


def create_settings_provider(
    data: Mapping[str, Any], *, secret_keys: Iterable[str] = ()
) -> DictSettingsProvider:
    return DictSettingsProvider(data, secret_keys=secret_keys)
