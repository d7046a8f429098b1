"""Skills: host-selected instruction bundles. Selection is the host's job;
assembly only renders the skills it is handed, in the order given."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prism.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    instructions: str = ""
    description: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError("skill name must be a non-empty string")
        if not isinstance(self.instructions, str) or not isinstance(self.description, str):
            raise ConfigError(f"skill {self.name!r}: instructions and description must be strings")

    def render(self) -> str:
        """``Skill <name>: <description>`` then the instructions."""
        head = f"Skill {self.name}"
        if self.description:
            head += f": {self.description}"
        return f"{head}\n{self.instructions}" if self.instructions else head
