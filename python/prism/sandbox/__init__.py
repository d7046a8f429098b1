"""Sandboxes: a disposable place to run a model's commands.

``create_native_sandbox`` (bubblewrap, or a network namespace alone) and
``create_docker_sandbox`` (a private container on a local image) satisfy one
contract, :class:`DisposableSandbox`; egress goes only through the host's
allow-list proxy. See docs/sandboxes.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.sandbox.contract import (
        ERR_EGRESS_POLICY,
        ERR_PROCESS_ATTACH,
        ERR_PROCESS_UNSUPPORTED,
        ERR_SANDBOX,
        ERR_SANDBOX_CLOSED,
        ERR_SANDBOX_EXPORT_LIMIT,
        ERR_SANDBOX_LIMIT,
        ERR_SANDBOX_PATH,
        ERR_SANDBOX_TAR_ENTRY,
        ERR_SANDBOX_UNAVAILABLE,
        DisposableSandbox,
        ExecResult,
        ProcessUnsupportedError,
        SandboxCapabilities,
        SandboxClosedError,
        SandboxError,
        SandboxLimitError,
        SandboxLimits,
        SandboxPathError,
        SandboxStatus,
        SandboxUnavailableError,
        TarIdentity,
    )
    from prism.sandbox.egress import (
        EGRESS_PRESETS,
        EgressPolicy,
        EgressRule,
        create_egress_policy,
    )
    from prism.sandbox.native import (
        NativeSandbox,
        create_native_sandbox,
    )
    from prism.sandbox.processes import (
        ProcessOutput,
        ProcessState,
        SandboxProcess,
    )

_EXPORTS: dict[str, str] = {
    "ERR_EGRESS_POLICY": "prism.sandbox.contract",
    "ERR_PROCESS_ATTACH": "prism.sandbox.contract",
    "ERR_PROCESS_UNSUPPORTED": "prism.sandbox.contract",
    "ERR_SANDBOX": "prism.sandbox.contract",
    "ERR_SANDBOX_CLOSED": "prism.sandbox.contract",
    "ERR_SANDBOX_EXPORT_LIMIT": "prism.sandbox.contract",
    "ERR_SANDBOX_LIMIT": "prism.sandbox.contract",
    "ERR_SANDBOX_PATH": "prism.sandbox.contract",
    "ERR_SANDBOX_TAR_ENTRY": "prism.sandbox.contract",
    "ERR_SANDBOX_UNAVAILABLE": "prism.sandbox.contract",
    "DisposableSandbox": "prism.sandbox.contract",
    "ExecResult": "prism.sandbox.contract",
    "ProcessUnsupportedError": "prism.sandbox.contract",
    "SandboxCapabilities": "prism.sandbox.contract",
    "SandboxClosedError": "prism.sandbox.contract",
    "SandboxError": "prism.sandbox.contract",
    "SandboxLimitError": "prism.sandbox.contract",
    "SandboxLimits": "prism.sandbox.contract",
    "SandboxPathError": "prism.sandbox.contract",
    "SandboxStatus": "prism.sandbox.contract",
    "SandboxUnavailableError": "prism.sandbox.contract",
    "TarIdentity": "prism.sandbox.contract",
    "EGRESS_PRESETS": "prism.sandbox.egress",
    "EgressPolicy": "prism.sandbox.egress",
    "EgressRule": "prism.sandbox.egress",
    "create_egress_policy": "prism.sandbox.egress",
    "NativeSandbox": "prism.sandbox.native",
    "create_native_sandbox": "prism.sandbox.native",
    "ProcessOutput": "prism.sandbox.processes",
    "ProcessState": "prism.sandbox.processes",
    "SandboxProcess": "prism.sandbox.processes",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "EGRESS_PRESETS",
    "ERR_EGRESS_POLICY",
    "ERR_PROCESS_ATTACH",
    "ERR_PROCESS_UNSUPPORTED",
    "ERR_SANDBOX",
    "ERR_SANDBOX_CLOSED",
    "ERR_SANDBOX_EXPORT_LIMIT",
    "ERR_SANDBOX_LIMIT",
    "ERR_SANDBOX_PATH",
    "ERR_SANDBOX_TAR_ENTRY",
    "ERR_SANDBOX_UNAVAILABLE",
    "DisposableSandbox",
    "EgressPolicy",
    "EgressRule",
    "ExecResult",
    "NativeSandbox",
    "ProcessOutput",
    "ProcessState",
    "ProcessUnsupportedError",
    "SandboxCapabilities",
    "SandboxClosedError",
    "SandboxError",
    "SandboxLimitError",
    "SandboxLimits",
    "SandboxPathError",
    "SandboxProcess",
    "SandboxStatus",
    "SandboxUnavailableError",
    "TarIdentity",
    "create_egress_policy",
    "create_native_sandbox",
]
