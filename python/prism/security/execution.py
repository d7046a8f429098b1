"""Execution policy: what a tool may do to the workspace, asked inside the tool.

A tool builds an ``ExecutionAction`` (kind, resolved paths, argv, cwd, tool
call id) and calls ``await authorize(policy, action)`` **before** any side
effect. The policy answers with one of four ``ExecutionDecision`` outcomes:

- ``allow``: go ahead with the action as asked;
- ``deny``: refuse; ``reason`` is what the model sees as the tool error;
- ``ask``: a human must decide; the policy's ``approve`` callback is awaited
  (in-process approval). Without one, ``ask`` is a refusal that says so;
- ``allow_with_changes``: go ahead with ``action`` replaced (an approver
  narrowed a path or edited argv). The changed action is checked again
  against the roots and the rules' denials, so an edit cannot widen access.

This complements the name-based ``PermissionPolicy`` at dispatch: dispatch
asks "may tool X run", the execution policy asks "may this run write
``src/app.py``" or "run ``git push``"; both must allow.

Precedence (``create_execution_policy``; docs/coding.md has the table):

1. every path and the cwd must resolve inside the roots (symlink-aware), or
   deny; no rule or approver overrides this;
2. a matching ``deny`` rule denies;
3. a matching ``ask`` rule asks;
4. a matching ``allow`` rule allows;
5. otherwise the kind's default: ``read`` allows; ``shell``, ``write``,
   ``edit``, ``delete``, ``move`` and ``network`` ask (so without an
   ``approve`` callback they are denied).

A policy or approver that raises fails closed: the action is denied and the
reason names only the exception type (its text may hold a secret).
"""

from __future__ import annotations

import fnmatch
import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from prism.errors import ExecutionDeniedError
from prism.security.approval import ApprovalDecision, ApprovalRequiredError, granted_decision
from prism.security.redaction import SecretRedactor, require_redactor
from prism.security.roots import assert_path_inside_roots, normalize_roots

ExecutionKind = Literal["read", "write", "edit", "delete", "move", "shell", "network"]
EXECUTION_KINDS: frozenset[str] = frozenset(get_args(ExecutionKind))
DecisionOutcome = Literal["allow", "deny", "ask", "allow_with_changes"]
RuleDecision = Literal["allow", "deny", "ask"]
_ASKING_BY_DEFAULT = frozenset({"write", "edit", "delete", "move", "shell", "network"})


@dataclass(frozen=True, slots=True)
class ExecutionAction:
    """One side effect a tool is about to make.

    ``paths`` are the files it touches (resolved by the tool or given as the
    model wrote them; the policy resolves them again), ``argv`` the command
    for ``shell`` (a rule sees argv, never a shell string), ``cwd`` where a
    command runs. ``tool_name``/``tool_call_id`` say who asks.
    """

    kind: ExecutionKind
    paths: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    cwd: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in EXECUTION_KINDS:
            raise ValueError(
                f"execution kind must be one of {sorted(EXECUTION_KINDS)}, got {self.kind!r}"
            )
        for name in ("paths", "argv"):
            value = getattr(self, name)
            if isinstance(value, (str, bytes)) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"ExecutionAction.{name} must be a tuple of strings")
            object.__setattr__(self, name, tuple(value))

    def describe(self) -> str:
        """A short human line (for approval prompts and refusals)."""
        if self.kind == "shell":
            return f"run {' '.join(self.argv)!r}" + (f" in {self.cwd}" if self.cwd else "")
        return f"{self.kind} {', '.join(self.paths)}"


@dataclass(frozen=True, slots=True)
class ExecutionDecision:
    """One of four outcomes; build them with the class methods."""

    outcome: DecisionOutcome
    reason: str = ""
    action: ExecutionAction | None = None
    """The replacement action of ``allow_with_changes``."""

    def __post_init__(self) -> None:
        if self.outcome not in get_args(DecisionOutcome):
            raise ValueError(f"unknown decision outcome {self.outcome!r}")
        if (self.outcome == "allow_with_changes") != (self.action is not None):
            raise ValueError("allow_with_changes (and only it) carries the changed action")

    @classmethod
    def allow(cls, reason: str = "") -> ExecutionDecision:
        return cls("allow", reason)

    @classmethod
    def deny(cls, reason: str) -> ExecutionDecision:
        return cls("deny", reason)

    @classmethod
    def ask(cls, reason: str) -> ExecutionDecision:
        return cls("ask", reason)

    @classmethod
    def allow_with_changes(cls, action: ExecutionAction, reason: str = "") -> ExecutionDecision:
        return cls("allow_with_changes", reason, action)


@runtime_checkable
class ExecutionPolicy(Protocol):
    """Decides one action. May be sync or async."""

    @property
    def roots(self) -> tuple[str, ...]: ...

    def decide(
        self, action: ExecutionAction
    ) -> ExecutionDecision | Awaitable[ExecutionDecision]: ...


Approver = Callable[
    [ExecutionAction, str],
    "ExecutionDecision | bool | Awaitable[ExecutionDecision | bool]",
]
"""``approve(action, reason)``: the host's human (a CLI prompt, a web request)."""


def _match_args(patterns: Sequence[str], args: Sequence[str]) -> bool:
    if patterns and patterns[-1] == "...":
        fixed = patterns[:-1]
        if len(args) < len(fixed):
            return False
        args = args[: len(fixed)]
        patterns = fixed
    if len(patterns) != len(args):
        return False
    return all(
        fnmatch.fnmatchcase(arg, pattern) for pattern, arg in zip(patterns, args, strict=True)
    )


@dataclass(frozen=True, slots=True)
class ExecutionRule:
    """A rule: ``decision`` when every given condition holds.

    - ``kinds``: the action kinds it covers (``None``: any; a ``program``
      rule defaults to ``shell``);
    - ``program``: ``argv[0]`` exactly as written (``"git"`` does not match
      ``"/tmp/x/git"``; write both if both are meant);
    - ``args``: patterns for ``argv[1:]``, position by position, each an
      ``fnmatch`` pattern (``*``, ``?``, ``[...]``); a last ``"..."`` matches
      any remaining arguments; ``None``: any arguments;
    - ``paths``: ``fnmatch`` patterns on root-relative paths; every path of
      the action must match one.
    """

    decision: RuleDecision
    kinds: frozenset[str] | None = None
    program: str | None = None
    args: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.decision not in get_args(RuleDecision):
            raise ValueError(f"rule decision must be allow, deny or ask, got {self.decision!r}")
        kinds = self.kinds
        if kinds is None and self.program is not None:
            kinds = frozenset({"shell"})
        if kinds is not None:
            kinds = frozenset(kinds)
            unknown = kinds - EXECUTION_KINDS
            if unknown:
                raise ValueError(f"rule kinds not known: {sorted(unknown)}")
        object.__setattr__(self, "kinds", kinds)
        if self.program is not None and (not isinstance(self.program, str) or not self.program):
            raise ValueError("rule program must be a non-empty string")
        if self.args is not None:
            if isinstance(self.args, str) or not all(isinstance(a, str) for a in self.args):
                raise ValueError("rule args must be a sequence of patterns, not a string")
            object.__setattr__(self, "args", tuple(self.args))
        if self.paths is not None:
            if isinstance(self.paths, str):
                raise ValueError("rule paths must be a sequence of patterns, not a string")
            object.__setattr__(self, "paths", tuple(self.paths))

    def matches(self, action: ExecutionAction, relative_paths: Sequence[str]) -> bool:
        if self.kinds is not None and action.kind not in self.kinds:
            return False
        if self.program is not None and (not action.argv or action.argv[0] != self.program):
            return False
        if self.args is not None and not _match_args(self.args, action.argv[1:]):
            return False
        if self.paths is not None:
            patterns = self.paths
            if not relative_paths or not all(
                any(fnmatch.fnmatchcase(p, pattern) for pattern in patterns) for p in relative_paths
            ):
                return False
        return True


def allow_command(program: str, *args: str, reason: str = "") -> ExecutionRule:
    """Allow ``program`` with exactly these argument patterns (none given: any)."""
    return ExecutionRule("allow", program=program, args=args or None, reason=reason)


def deny_command(program: str, *args: str, reason: str = "") -> ExecutionRule:
    return ExecutionRule("deny", program=program, args=args or None, reason=reason)


def ask_command(program: str, *args: str, reason: str = "") -> ExecutionRule:
    return ExecutionRule("ask", program=program, args=args or None, reason=reason)


def allow_kinds(*kinds: ExecutionKind, paths: Sequence[str] | None = None) -> ExecutionRule:
    """Allow whole kinds (``allow_kinds("write", "edit", paths=["src/*"])``)."""
    return ExecutionRule(
        "allow", kinds=frozenset(kinds), paths=None if paths is None else tuple(paths)
    )


class RootedExecutionPolicy:
    """The policy ``create_execution_policy`` builds (see the module docstring)."""

    __slots__ = ("_approve", "_defer", "_redactor", "_roots", "_rules")

    def __init__(
        self,
        roots: tuple[str, ...],
        rules: tuple[ExecutionRule, ...],
        approve: Approver | None,
        redactor: SecretRedactor,
        defer: bool = False,
    ) -> None:
        self._roots = roots
        self._rules = rules
        self._approve = approve
        self._redactor = redactor
        self._defer = defer

    @property
    def defers(self) -> bool:
        """``ask`` pauses a durable run for a human (docs/approvals.md)."""
        return self._defer

    @property
    def roots(self) -> tuple[str, ...]:
        return self._roots

    @property
    def has_approver(self) -> bool:
        return self._approve is not None

    def resolve(self, action: ExecutionAction) -> tuple[ExecutionAction, tuple[str, ...]]:
        """The action with its paths and cwd resolved inside the roots (step 1),
        and its root-relative paths for rule matching."""
        cwd = None
        if action.cwd is not None:
            cwd = str(assert_path_inside_roots(action.cwd, self._roots, allow_hard_links=True))
        resolved: list[str] = []
        relative: list[str] = []
        for path in action.paths:
            real = str(assert_path_inside_roots(path, self._roots, cwd=cwd))
            resolved.append(real)
            relative.append(_relative(real, self._roots))
        return replace(action, paths=tuple(resolved), cwd=cwd), tuple(relative)

    def rule_decision(self, action: ExecutionAction, relative: Sequence[str]) -> ExecutionDecision:
        """Steps 2-5 on an already resolved action."""
        matched = [rule for rule in self._rules if rule.matches(action, relative)]
        for wanted in ("deny", "ask", "allow"):
            for rule in matched:
                if rule.decision == wanted:
                    reason = rule.reason or f"{wanted} by rule for {action.describe()}"
                    return ExecutionDecision(wanted, reason)
        if action.kind in _ASKING_BY_DEFAULT:
            return ExecutionDecision.ask(f"{action.kind} needs approval: {action.describe()}")
        return ExecutionDecision.allow()

    async def decide(self, action: ExecutionAction) -> ExecutionDecision:
        try:
            resolved, relative = self.resolve(action)
        except ExecutionDeniedError as refused:
            return ExecutionDecision.deny(str(refused))
        decision = self.rule_decision(resolved, relative)
        if decision.outcome != "ask" or self._approve is None:
            return decision
        answer = await self._ask(resolved, decision.reason)
        if answer.outcome == "allow_with_changes":
            assert answer.action is not None
            return self._recheck(resolved, answer)
        if answer.outcome == "ask":
            return ExecutionDecision.deny("the approver did not decide (answered ask)")
        return answer

    async def _ask(self, action: ExecutionAction, reason: str) -> ExecutionDecision:
        assert self._approve is not None
        try:
            answer: Any = self._approve(action, reason)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as error:
            return ExecutionDecision.deny(
                self._redactor.redact_text(f"approver failed: {type(error).__name__}")
            )
        if isinstance(answer, bool):
            if answer:
                return ExecutionDecision.allow("approved")
            return ExecutionDecision.deny(f"not approved: {action.describe()}")
        if isinstance(answer, ExecutionDecision):
            return answer
        return ExecutionDecision.deny("the approver returned a non-decision")

    def _recheck(self, original: ExecutionAction, answer: ExecutionDecision) -> ExecutionDecision:
        changed = answer.action
        assert changed is not None
        if changed.kind != original.kind:
            return ExecutionDecision.deny(
                f"an approver may not change the action's kind ({original.kind} -> {changed.kind})"
            )
        try:
            resolved, relative = self.resolve(changed)
        except ExecutionDeniedError as refused:
            return ExecutionDecision.deny(f"changed action refused: {refused}")
        recheck = self.rule_decision(resolved, relative)
        if recheck.outcome == "deny":
            return ExecutionDecision.deny(f"changed action refused: {recheck.reason}")
        return ExecutionDecision.allow_with_changes(resolved, answer.reason)


def _relative(real: str, roots: Sequence[str]) -> str:
    for root in roots:
        if real == root:
            return "."
        if real.startswith(root.rstrip(os.sep) + os.sep):
            return real[len(root.rstrip(os.sep)) + 1 :]
    return real


def create_execution_policy(
    roots: Iterable[str | os.PathLike[str]],
    rules: Iterable[ExecutionRule] = (),
    approve: Approver | None = None,
    *,
    redactor: SecretRedactor,
    defer: bool = False,
) -> RootedExecutionPolicy:
    """The default policy: roots, ordered rules, an optional approver.

    ``defer=True`` (instead of ``approve``): an ``ask`` pauses a durable run
    until a human decides, possibly in another process (docs/approvals.md).

    Raises ``ValueError`` for a root that is not an existing directory, a
    rule that is not an ``ExecutionRule``, or both ``approve`` and ``defer``.
    """
    require_redactor(redactor, owner="create_execution_policy")
    resolved_roots = normalize_roots(roots)
    rule_list = tuple(rules)
    for rule in rule_list:
        if not isinstance(rule, ExecutionRule):
            raise ValueError(f"rules must be ExecutionRule values, got {type(rule).__name__}")
    if approve is not None and not callable(approve):
        raise ValueError("approve must be callable")
    if approve is not None and defer:
        raise ValueError("choose approve (in-process) or defer=True (pause the run), not both")
    return RootedExecutionPolicy(resolved_roots, rule_list, approve, redactor, bool(defer))


def action_context(action: ExecutionAction) -> dict[str, Any]:
    """An action as JSON data (what a pending approval shows a human)."""
    context: dict[str, Any] = {"kind": action.kind}
    if action.paths:
        context["paths"] = list(action.paths)
    if action.argv:
        context["argv"] = list(action.argv)
    if action.cwd is not None:
        context["cwd"] = action.cwd
    return context


async def authorize(
    policy: ExecutionPolicy,
    action: ExecutionAction,
    *,
    redactor: SecretRedactor,
) -> ExecutionAction:
    """Ask ``policy`` and return the action to perform (the changed one for
    ``allow_with_changes``), or raise ``ExecutionDeniedError`` with the
    reason. ``ask`` left undecided is a refusal; a policy that raises or
    answers something else refuses (fail closed, reason redacted)."""
    require_redactor(redactor, owner="authorize")
    decision = await _ask_policy(policy, action, redactor)
    if not isinstance(decision, ExecutionDecision):
        raise ExecutionDeniedError("execution policy returned a non-decision")
    if decision.outcome == "allow":
        return action
    if decision.outcome == "allow_with_changes":
        assert decision.action is not None
        return decision.action
    if decision.outcome == "ask":
        granted = granted_decision()
        if granted is not None:
            return await _apply_granted(policy, action, granted, redactor)
        if getattr(policy, "defers", False):
            raise ApprovalRequiredError(
                redactor.redact_text(decision.reason or f"needs approval: {action.describe()}"),
                action_context(action),
            )
        raise ExecutionDeniedError(
            redactor.redact_text(
                f"{decision.reason or action.describe()}; no approver is configured, so it is refused"
            )
        )
    raise ExecutionDeniedError(
        redactor.redact_text(decision.reason or f"denied: {action.describe()}")
    )


async def _ask_policy(
    policy: ExecutionPolicy, action: ExecutionAction, redactor: SecretRedactor
) -> Any:
    """The policy's answer (sync or async); a policy that raises refuses,
    naming only the error's type (its text may hold what it was given)."""
    try:
        decision: Any = policy.decide(action)
        if inspect.isawaitable(decision):
            decision = await decision
    except Exception as error:
        raise ExecutionDeniedError(
            redactor.redact_text(f"execution policy failed: {type(error).__name__}")
        ) from None
    return decision


async def _apply_granted(
    policy: ExecutionPolicy,
    action: ExecutionAction,
    granted: ApprovalDecision,
    redactor: SecretRedactor,
) -> ExecutionAction:
    """A resumed run's human decision for an action the policy asks about.
    An edited action is decided by the policy again: a deny (roots, deny
    rules) still refuses it, so an edit cannot widen access."""
    if granted.kind == "approve":
        return action
    if granted.kind == "deny":
        raise ExecutionDeniedError(redactor.redact_text(granted.reason or "not approved"))
    changed = granted.action
    if not isinstance(changed, ExecutionAction) or changed.kind != action.kind:
        raise ExecutionDeniedError(
            "an edit of an execution action must give an ExecutionAction of the same kind"
        )
    changed = replace(changed, tool_name=action.tool_name, tool_call_id=action.tool_call_id)
    decision = await _ask_policy(policy, changed, redactor)
    if not isinstance(decision, ExecutionDecision) or decision.outcome == "deny":
        reason = decision.reason if isinstance(decision, ExecutionDecision) else "non-decision"
        raise ExecutionDeniedError(redactor.redact_text(f"edited action refused: {reason}"))
    if decision.outcome == "allow_with_changes":
        assert decision.action is not None
        return decision.action
    if isinstance(policy, RootedExecutionPolicy):
        return policy.resolve(changed)[0]
    return changed
