"""Prism's exceptions, defined once, in one tree. Native ValueError/TypeError
are mapped to these at the Python boundary where a caller is expected to
catch them.

A host catches the middle row: ``RunError`` for "the run failed",
``StoreError`` for "storage failed", ``ConfigError`` for "what I passed is
wrong", and so on (docs/errors.md). Every class keeps its own ``code``, the
value that travels in ``ErrorInfo`` on the wire. Builtins in parentheses are
extra bases, kept so ``except ValueError`` and friends still work::

    PrismError
     ├── ConfigError (ValueError)           an option, config file or manifest is invalid
     │    ├── ManifestError
     │    ├── ConfigFileError
     │    ├── SettingsError
     │    ├── AttentionConfigError (TypeError)
     │    ├── ApprovalDecisionError            (prism.runtime.approvals) a decision that cannot apply
     │    └── ToolEventError                   (prism.tools) a tool emitted something that is not a tool event
     ├── RunError                           a run ended without its answer
     │    ├── RunAbortedError
     │    ├── ProviderError
     │    ├── MaxToolRoundsError
     │    ├── StructuredOutputError
     │    ├── AttentionBudgetError
     │    └── ReplayDivergedError
     ├── SessionStateError                  the session cannot do that right now
     │    ├── SessionBusyError
     │    └── NoActiveRunError
     ├── StoreError                         a session store could not read or write
     │    ├── DuplicateEntryError (ValueError)
     │    ├── SessionLeaseLostError
     │    └── CheckpointDamagedError
     ├── ExtensionError                     an extension or one of its contributions failed
     │    ├── CommandError
     │    ├── RegistryClosedError
     │    └── DuplicateContributionError (ValueError)
     ├── AccessError                        a permission or a credential stopped an action
     │    ├── PermissionDeniedError
     │    │    └── ExecutionDeniedError
     │    │         └── ApprovalRequiredError  (prism.security.approval) a human must decide first
     │    └── CredentialError
     ├── UnknownNameError (KeyError)        a registry lookup of a name nobody registered
     ├── ResourceError                      a host's resource loader refused or failed
     ├── NestingTooDeepError (ValueError)   outside data nested deeper than Prism carries
     ├── LlmCompactionError                 (prism.compaction.llm) a model-written summary failed
     ├── RequestSerializationError (ValueError)
     │                                      (prism.providers) a request an adapter cannot send (every HTTP adapter)
     ├── InspectError                       (prism.inspect) the inspector cannot open what it was pointed at
     ├── EvalError                          (prism.evals) an eval suite could not load, run or report
     │    ├── DatasetError (ValueError)
     │    └── EvalGateError (AssertionError)
     ├── SandboxError                       (prism.sandbox) a sandbox refused, failed or hit a limit
     │    ├── SandboxUnavailableError
     │    ├── SandboxClosedError
     │    ├── SandboxPathError (ValueError)
     │    ├── SandboxLimitError
     │    └── ProcessUnsupportedError
     ├── WorkspaceError                     (prism.workspaces) a workspace, lease or checkpoint refused
     │    ├── WorkspaceConfigError (ValueError)
     │    ├── WorkspaceOwnershipError
     │    ├── WorkspaceFenceError
     │    ├── WorkspaceBusyError
     │    ├── WorkspaceConflictError
     │    ├── WorkspaceNotFoundError (KeyError)
     │    ├── WorkspaceMissingError
     │    ├── WorkspaceDirtyError
     │    ├── WorkspaceGitError
     │    └── WorkspaceStoreError
     ├── WorkflowError                      (prism.workflows) a workflow could not be defined, run or resumed
     │    ├── WorkflowDefinitionError (ValueError)
     │    ├── WorkflowChangedError
     │    ├── StepTypeError (TypeError)
     │    ├── LoopLimitError
     │    ├── StepInterruptedError
     │    └── WorkflowStepError
     ├── InvalidMemoryIdError (ValueError)  (prism.memory) not an observational-memory id
     └── SubagentError                      (prism.subagents) a delegation did not end with its answer
          ├── DelegationRejectedError          refused before the child existed (limits, factory)
          │    └── UnknownChildError           the model named a child the supervisor lacks
          ├── SubagentFailedError              the child's run failed
          └── SubagentAbortedError             the child's run was aborted (abort, budget)

tests/test_error_tree.py pins this drawing against the classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from prism.contracts import ErrorInfo, JsonValue
from prism.security.secret_redactor import SecretRedactor, require_redactor

_T = TypeVar("_T")


class PrismError(Exception):
    """Base of every error Prism raises on purpose."""

    code: str = "prism_error"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.details = details

    def to_error_info(self) -> ErrorInfo:
        """Message, code and (when given) the keyword details, JSON-shaped."""
        info: ErrorInfo = {"message": str(self), "code": self.code}
        if self.details:
            info["details"] = {str(k): _jsonable(v) for k, v in self.details.items()}
        return info


class ConfigError(PrismError, ValueError):
    """An option, config file or manifest is invalid."""

    code = "invalid_config"


class ManifestError(ConfigError):
    """A package manifest is not valid data; ``problems`` lists every finding."""

    code = "invalid_manifest"

    def __init__(self, message: str, *, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class ConfigFileError(ConfigError):
    """A config file could not be read; the message names path and reason only."""

    code = "config_file_error"


class SettingsError(ConfigError):
    """A setting is missing or has the wrong type; never carries the value."""

    code = "settings_error"


class AttentionConfigError(ConfigError, TypeError):
    """An attention compiler option, overlay or input cap is invalid.

    A ``TypeError`` like the reference's, and a ``ConfigError`` like every
    other Prism option error."""

    code = "invalid_config"


class RunError(PrismError):
    """A run ended without its answer: aborted, a provider failure, too many
    tool rounds, no valid structured output, over the attention budget, or
    a durable replay that diverged. Catch this for "the run failed"."""

    code = "run_error"


class RunAbortedError(RunError):
    code = "aborted"

    def __init__(self, message: str = "Agent run aborted") -> None:
        super().__init__(message)


class ProviderError(RunError):
    """A provider turn failed; carries the provider's ErrorInfo."""

    code = "provider_error"

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(info.get("message", "provider error"), code=info.get("code"))
        self.info = info

    def to_error_info(self) -> ErrorInfo:
        return self.info


class MaxToolRoundsError(RunError):
    """A run asked for more tool rounds than ``max_tool_rounds`` allows."""

    code = "max_tool_rounds"


class StructuredOutputError(RunError):
    """A run given ``output_type`` got no valid answer from the model within
    ``max_tool_rounds`` corrections."""

    code = "invalid_output"


class AttentionBudgetError(RunError):
    """The attention compiler ran every eligible stage and the request is still
    over its ratio: compact instead of silently evicting. Carries counts only."""

    code = "attention_budget_exceeded"

    def __init__(self, used: int, used_after: int, input_cap: int, trigger_ratio: float) -> None:
        super().__init__(
            f"attention budget exceeded: {used_after} estimated tokens after every eligible "
            f"stage (measured {used}) is over {trigger_ratio} of the {input_cap}-token input cap"
        )
        self.used = used
        self.used_after = used_after
        self.input_cap = input_cap
        self.trigger_ratio = trigger_ratio


class ReplayDivergedError(RunError):
    """A durable-execution engine replayed a run and the run did not do what
    its earlier execution stored (a stored entry of another kind, or on
    another branch): the run's code or configuration changed in between."""

    code = "replay_diverged"


class SessionStateError(PrismError):
    """The session cannot do that right now: a run is already active, or
    there is no active run to steer."""

    code = "session_state"


class SessionBusyError(SessionStateError):
    """A session already has an active run."""

    code = "session_busy"


class NoActiveRunError(SessionStateError):
    """steer/follow_up was called on a session with no active run."""

    code = "no_active_run"


class StoreError(PrismError):
    """A session store could not read or write."""

    code = "store_error"


class DuplicateEntryError(StoreError, ValueError):
    """A store refused an entry whose id it already holds (a ``StoreError``,
    so callers catching store failures see it too)."""

    code = "duplicate_entry"


class SessionLeaseLostError(StoreError):
    """A session lease was lost while its holder still ran (the store's lease
    connection died, or its lock is gone): another worker may hold the
    session now, so the store refuses the holder's appends until it releases
    the lease. Nothing of the refused append was written."""

    code = "session_lease_lost"


class CheckpointDamagedError(StoreError):
    """A durable run's evidence of what already ran (its newest checkpoint's
    tool-call lists, or a stored entry of the session quarantined as
    unreadable) cannot be read, so ``session.resume()`` refuses rather than
    guess and run a non-idempotent tool twice. Names the session and entry."""

    code = "checkpoint_damaged"


class ExtensionError(PrismError):
    """An extension is malformed or could not be loaded, or one of its
    contributions (a command, a registry entry) failed."""

    code = "extension_error"


class CommandError(ExtensionError):
    """A command contribution refused its arguments or failed while running."""

    code = "command_error"


class ResourceError(PrismError):
    """A resource could not be loaded or decoded."""

    code = "resource_error"


class RegistryClosedError(ExtensionError):
    """A registry (or an extension API) was used after it was frozen."""

    code = "registry_closed"


class DuplicateContributionError(ExtensionError, ValueError):
    """A contribution registry already holds a value under that name."""

    code = "duplicate_contribution"


class AccessError(PrismError):
    """A permission policy or a missing credential stopped an action."""

    code = "access_error"


class PermissionDeniedError(AccessError):
    code = "permission_denied"


class ExecutionDeniedError(PermissionDeniedError):
    """An execution policy refused an action inside a tool (a path outside the
    roots, a denied command, an approval refused or unavailable). Tool
    dispatch turns it into a ``policy_denied`` tool error the model sees."""

    code = "policy_denied"


class CredentialError(AccessError):
    """No credential resolved, or a refresh failed. Messages never hold secret values."""

    code = "credential_error"


class UnknownNameError(PrismError, KeyError):
    """A registry was asked for a name nobody registered."""

    code = "unknown_name"

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else self.code


class NestingTooDeepError(PrismError, ValueError):
    """A value from outside (model output, a tool result) is nested deeper
    than Prism carries; the message holds a short, redacted path only."""

    code = "too_deep"


# --- one way from an exception to ErrorInfo -------------------------------------------


def _jsonable(value: Any, depth: int = 0) -> JsonValue:
    """``value`` as JSON data; anything else (or anything absurdly deep) as its type name."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if depth < 32 and isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if depth < 32 and isinstance(value, list | tuple):
        return [_jsonable(v, depth + 1) for v in value]
    return f"<{type(value).__name__}>"


def _check_redactor(redactor: object) -> None:
    # Never None: a missing redactor is how secrets used to slip through.
    require_redactor(redactor, owner="error info")


def redact_error_info(info: ErrorInfo, redactor: SecretRedactor) -> ErrorInfo:
    """``info`` with secrets masked in ``message`` and ``details`` (a copy when
    anything changed; ``info`` itself when the redactor knows no secrets)."""
    _check_redactor(redactor)
    if len(redactor) == 0:
        return info
    out: ErrorInfo = {**info}
    out["message"] = redactor.redact_text(info["message"])
    details = info.get("details")
    if details is not None:
        out["details"] = redactor.redact_value(details)
    return out


def error_info(
    error: BaseException,
    redactor: SecretRedactor,
    *,
    code: str = "runtime_error",
    with_type: bool = False,
) -> ErrorInfo:
    """The one way an exception becomes ``ErrorInfo``: a ``PrismError`` gives its
    own message, code and details; anything else gives its text (or its type
    name when it has none) under ``code``. ``with_type`` prefixes the type name
    for errors nobody planned for. Always redacted, repr-built text included:
    the redactor also knows each secret's escaped forms."""
    _check_redactor(redactor)
    if isinstance(error, PrismError):
        info = error.to_error_info()
    else:
        text = str(error).strip()
        if with_type:
            text = f"{type(error).__name__}: {text}" if text else type(error).__name__
        info = {"message": text or type(error).__name__, "code": code}
    return redact_error_info(info, redactor)
