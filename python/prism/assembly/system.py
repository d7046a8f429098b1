"""Layered system prompts: package, app, user and run layers, composed in that
order (stable within a layer) into labeled instructions for input assembly.
Nothing is discovered: the host passes every layer explicitly."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal, NotRequired, TypedDict

from prism.errors import ConfigError

SystemPromptLayerKind = Literal["package", "app", "user", "run"]
LAYER_ORDER: Final[tuple[str, ...]] = ("package", "app", "user", "run")


class PromptInstruction(TypedDict):
    """A labeled system instruction; rendered as ``"<label>:\\n<text>"``."""

    text: str
    label: NotRequired[str]


@dataclass(frozen=True, slots=True)
class SystemPromptLayer:
    kind: SystemPromptLayerKind
    text: str
    name: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in LAYER_ORDER:
            raise ConfigError(
                f"system prompt layer kind must be one of {list(LAYER_ORDER)}, got {self.kind!r}"
            )
        if not isinstance(self.text, str):
            raise ConfigError(f"system prompt layer text must be a string ({self.kind})")
        if self.name is not None and not isinstance(self.name, str):
            raise ConfigError(f"system prompt layer name must be a string ({self.kind})")

    @property
    def label(self) -> str:
        base = f"{self.kind.capitalize()} system prompt"
        return f"{base} ({self.name})" if self.name else base


def compose_system_prompt(layers: Iterable[SystemPromptLayer]) -> list[PromptInstruction]:
    """Order layers package -> app -> user -> run; blank layers are dropped."""
    collected = list(layers)
    for layer in collected:
        if not isinstance(layer, SystemPromptLayer):
            raise ConfigError(
                f"system prompt layers must be SystemPromptLayer, got {type(layer).__name__}"
            )
    ordered = sorted(collected, key=lambda layer: LAYER_ORDER.index(layer.kind))
    return [
        {"label": layer.label, "text": layer.text.strip()}
        for layer in ordered
        if layer.text.strip()
    ]


def render_system_prompt(layers: Iterable[SystemPromptLayer]) -> str:
    """The composed layers as one string, blank-line separated, labels included."""
    return "\n\n".join(
        f"{item['label']}:\n{item['text']}" for item in compose_system_prompt(layers)
    )
