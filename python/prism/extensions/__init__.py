"""Extensions: the kernel, its event bus, and command contributions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.extensions.commands import (
        CommandDefinition,
        collect_commands,
        define_command,
        execute_command,
    )
    from prism.extensions.events import (
        EventBus,
        create_event_bus,
    )
    from prism.extensions.kernel import (
        LIFECYCLE_EVENTS,
        Extension,
        ExtensionAPI,
        ExtensionFailure,
        ExtensionKernel,
        ExtensionLike,
        LoadReport,
        create_extension_kernel,
        define_extension,
    )

_EXPORTS: dict[str, str] = {
    "CommandDefinition": "prism.extensions.commands",
    "collect_commands": "prism.extensions.commands",
    "define_command": "prism.extensions.commands",
    "execute_command": "prism.extensions.commands",
    "EventBus": "prism.extensions.events",
    "create_event_bus": "prism.extensions.events",
    "LIFECYCLE_EVENTS": "prism.extensions.kernel",
    "Extension": "prism.extensions.kernel",
    "ExtensionAPI": "prism.extensions.kernel",
    "ExtensionFailure": "prism.extensions.kernel",
    "ExtensionKernel": "prism.extensions.kernel",
    "ExtensionLike": "prism.extensions.kernel",
    "LoadReport": "prism.extensions.kernel",
    "create_extension_kernel": "prism.extensions.kernel",
    "define_extension": "prism.extensions.kernel",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "LIFECYCLE_EVENTS",
    "CommandDefinition",
    "EventBus",
    "Extension",
    "ExtensionAPI",
    "ExtensionFailure",
    "ExtensionKernel",
    "ExtensionLike",
    "LoadReport",
    "collect_commands",
    "create_event_bus",
    "create_extension_kernel",
    "define_command",
    "define_extension",
    "execute_command",
]
