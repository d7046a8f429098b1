"""The host's tool registry with exact-name allow/deny filters."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prism.contracts import ToolDeclaration
from prism.errors import ConfigError
from prism.tools.definition import ToolDefinition


def _name_set(label: str, names: Iterable[str] | None) -> frozenset[str] | None:
    if names is None:
        return None
    if isinstance(names, str):
        raise ConfigError(f"{label} must be a collection of tool names, not a single string")
    out = frozenset(names)
    for name in out:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{label} entries must be non-empty strings, got {name!r}")
    return out


class ToolRegistry:
    """Tools in registration order.

    Filters are exact names (no globs): ``allow=None`` allows every registered
    tool, ``deny`` always wins. A filtered-out tool stays registered (``get``
    finds it) but is not active: it is not declared to providers and dispatch
    refuses it.
    """

    def __init__(
        self,
        tools: Iterable[ToolDefinition] = (),
        allow: Iterable[str] | None = None,
        deny: Iterable[str] | None = None,
    ) -> None:
        self.allow = _name_set("allow", allow)
        self.deny = _name_set("deny", deny) or frozenset()
        self._tools: dict[str, ToolDefinition] = {}
        for definition in tools:
            self.register(definition)

    def register(self, definition: ToolDefinition) -> Callable[[], None]:
        """Add a tool; returns a callable that removes it again."""
        if not isinstance(definition, ToolDefinition):
            raise ConfigError(
                f"register expects a ToolDefinition (see define_tool), got {type(definition).__name__}"
            )
        if definition.name in self._tools:
            raise ConfigError(f"tool {definition.name!r} is already registered")
        self._tools[definition.name] = definition

        def unregister() -> None:
            if self._tools.get(definition.name) is definition:
                del self._tools[definition.name]

        return unregister

    def copy(self) -> ToolRegistry:
        """The same tools and filters; registering on either does not reach the other."""
        return ToolRegistry(self._tools.values(), self.allow, self.deny)

    def get(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name) if isinstance(name, str) else None

    def is_active(self, name: str) -> bool:
        if not isinstance(name, str) or name not in self._tools or name in self.deny:
            return False
        return self.allow is None or name in self.allow

    def active(self) -> list[ToolDefinition]:
        return [tool for name, tool in self._tools.items() if self.is_active(name)]

    def declarations(self) -> list[ToolDeclaration]:
        return [tool.declaration() for tool in self.active()]

    def names(self) -> list[str]:
        return list(self._tools)

    def with_filters(
        self, allow: Iterable[str] | None = None, deny: Iterable[str] | None = None
    ) -> ToolRegistry:
        """A new registry with the same tools and narrower filters: the result
        allows only what both this registry and ``allow`` allow, and denies the
        union of both deny lists. It can never activate a tool this one denies."""
        narrowed = _name_set("allow", allow)
        if self.allow is not None:
            narrowed = self.allow if narrowed is None else self.allow & narrowed
        denied = self.deny | (_name_set("deny", deny) or frozenset())
        return ToolRegistry(self._tools.values(), allow=narrowed, deny=denied)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._tools


def create_tool_registry(
    tools: Iterable[ToolDefinition] = (),
    allow: Iterable[str] | None = None,
    deny: Iterable[str] | None = None,
) -> ToolRegistry:
    return ToolRegistry(tools, allow=allow, deny=deny)
