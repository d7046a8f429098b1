"""Contribution registries: explicit, host-owned name -> value tables.

Registering is inert: a registry only stores values. Nothing runs until a
host resolves a contribution and hands it to runtime code (an agent, a tool
registry, the CLI's ``command`` request). There are no module-level
registries; every host creates its own with ``create_contribution_registries``.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from prism.errors import (
    ConfigError,
    DuplicateContributionError,
    RegistryClosedError,
    UnknownNameError,
)

T = TypeVar("T")

# Manifest/JSON spelling of each contribution kind -> attribute of the bundle.
CONTRIBUTION_KINDS: dict[str, str] = {
    "tool": "tools",
    "provider": "providers",
    "model": "models",
    "compactionStrategy": "compaction_strategies",
    "retryPolicy": "retry_policies",
    "inputBuilder": "input_builders",
    "promptBuilder": "prompt_builders",
    "contextProvider": "context_providers",
    "skill": "skills",
    "command": "commands",
}

_MAX_NAME_LENGTH = 200
# Unknown-name errors list at most this many registered names: enough to spot
# a typo without turning an error line into a dump of the whole registry.
_MAX_LISTED_NAMES = 20


def check_contribution_name(kind: str, name: object) -> str:
    """Names are short printable strings without surrounding whitespace."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{kind} name must be a non-empty string")
    if len(name) > _MAX_NAME_LENGTH:
        raise ConfigError(f"{kind} name is longer than {_MAX_NAME_LENGTH} characters")
    if name != name.strip() or not name.isprintable():
        raise ConfigError(f"{kind} name must be printable with no leading or trailing whitespace")
    return name


class ContributionRegistry(Generic[T]):
    """An ordered name -> value table for one contribution kind.

    Duplicate names are refused (no silent override), unknown names raise
    ``UnknownNameError``, and after ``freeze()`` every mutation raises
    ``RegistryClosedError``.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._frozen = False

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        """Close the registry; later ``register``/``unregister`` calls fail."""
        self._frozen = True

    def _check_open(self, action: str) -> None:
        if self._frozen:
            raise RegistryClosedError(
                f"cannot {action} {self.kind}: the {self.kind} registry is closed "
                "(registration ends when the extension kernel finishes loading)"
            )

    def register(self, name: str, value: T) -> None:
        self._check_open("register")
        check_contribution_name(self.kind, name)
        if name in self._items:
            raise DuplicateContributionError(f"{self.kind} {name!r} is already registered")
        self._items[name] = value

    def unregister(self, name: str) -> None:
        """Remove ``name``; used by the kernel to roll back a failed extension."""
        self._check_open("unregister")
        if name not in self._items:
            raise self._unknown(name)
        del self._items[name]

    def _unknown(self, name: object) -> UnknownNameError:
        names = list(self._items)
        if not names:
            known = "none are registered"
        else:
            shown = ", ".join(repr(n) for n in names[:_MAX_LISTED_NAMES])
            more = len(names) - _MAX_LISTED_NAMES
            known = f"registered: {shown}" + (f" and {more} more" if more > 0 else "")
        # Show the requested name only when it is a plausible name; a caller
        # may pass arbitrary input here and it should not be echoed at length.
        shown_name = repr(name) if isinstance(name, str) and len(name) <= 200 else "name"
        return UnknownNameError(f"unknown {self.kind} {shown_name}; {known}")

    def resolve(self, name: str) -> T:
        if not isinstance(name, str) or name not in self._items:
            raise self._unknown(name)
        return self._items[name]

    def get(self, name: str) -> T | None:
        return self._items.get(name) if isinstance(name, str) else None

    def has(self, name: str) -> bool:
        return isinstance(name, str) and name in self._items

    def names(self) -> list[str]:
        return list(self._items)

    def list(self) -> list[T]:
        """Registered values in registration order."""
        return list(self._items.values())

    def items(self) -> builtins.list[tuple[str, T]]:
        return list(self._items.items())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __repr__(self) -> str:
        state = "frozen" if self._frozen else "open"
        return f"<ContributionRegistry {self.kind} {len(self._items)} names, {state}>"


class ContributionRegistries:
    """One registry per contribution kind. Values are whatever runtime code
    for that kind accepts (``ToolDefinition``, ``AIProvider``,
    ``ModelConfig``, ``CommandDefinition``, ...); the registries never call
    them."""

    __slots__ = (
        "commands",
        "compaction_strategies",
        "context_providers",
        "input_builders",
        "models",
        "prompt_builders",
        "providers",
        "retry_policies",
        "skills",
        "tools",
    )

    def __init__(self) -> None:
        self.tools: ContributionRegistry[Any] = ContributionRegistry("tool")
        self.providers: ContributionRegistry[Any] = ContributionRegistry("provider")
        self.models: ContributionRegistry[Any] = ContributionRegistry("model")
        self.compaction_strategies: ContributionRegistry[Any] = ContributionRegistry(
            "compaction strategy"
        )
        self.retry_policies: ContributionRegistry[Any] = ContributionRegistry("retry policy")
        self.input_builders: ContributionRegistry[Any] = ContributionRegistry("input builder")
        self.prompt_builders: ContributionRegistry[Any] = ContributionRegistry("prompt builder")
        self.context_providers: ContributionRegistry[Any] = ContributionRegistry("context provider")
        self.skills: ContributionRegistry[Any] = ContributionRegistry("skill")
        self.commands: ContributionRegistry[Any] = ContributionRegistry("command")

    def by_kind(self, kind: str) -> ContributionRegistry[Any]:
        """The registry for a manifest kind (``"tool"``, ``"compactionStrategy"``, ...)."""
        attribute = CONTRIBUTION_KINDS.get(kind)
        if attribute is None:
            raise UnknownNameError(
                f"unknown contribution kind {kind!r}; expected one of {sorted(CONTRIBUTION_KINDS)}"
            )
        registry: ContributionRegistry[Any] = getattr(self, attribute)
        return registry

    def all(self) -> builtins.list[ContributionRegistry[Any]]:
        return [getattr(self, attribute) for attribute in CONTRIBUTION_KINDS.values()]

    def freeze(self) -> None:
        for registry in self.all():
            registry.freeze()

    @property
    def frozen(self) -> bool:
        return all(registry.frozen for registry in self.all())

    def summary(self) -> dict[str, list[str]]:
        """``{kind: [names]}`` for non-empty registries, in manifest spelling."""
        return {
            kind: self.by_kind(kind).names()
            for kind in CONTRIBUTION_KINDS
            if len(self.by_kind(kind))
        }


def create_contribution_registries() -> ContributionRegistries:
    return ContributionRegistries()
