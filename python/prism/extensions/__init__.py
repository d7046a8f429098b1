"""Extensions: the kernel, its event bus, and command contributions."""

from prism.extensions.commands import (
    CommandDefinition,
    collect_commands,
    define_command,
    execute_command,
)
from prism.extensions.events import EventBus, create_event_bus
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
