"""Attention compiler configuration: options, input-cap resolution, the frozen
compiler handle and the per-run narrowing overlay (reference:
attention-compiler.md, "Inputs / request").

Every rule fails closed at construction with :class:`AttentionConfigError`,
which is both a ``TypeError`` (the reference's error type) and a
:class:`prism.errors.ConfigError`, so a tuning typo never reaches a turn.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prism._json_fields import NOT_JSON, json_keys
from prism._options import options_from_mapping
from prism.attention.policy import (
    DEFAULT_POLICY,
    DEFAULT_PROACTIVE_FLOOR,
    ToolResultFold,
    cache_multipliers,
    check_policy,
    coerce_fold,
    proactive_ratio,
)
from prism.errors import AttentionConfigError

MAX_EXCLUDE_TOOLS = 256
MAX_TOOL_NAME_LENGTH = 256


def _ratio(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AttentionConfigError(f"attention {name} must be a number, got {type(value).__name__}")
    ratio = float(value)
    if not math.isfinite(ratio) or not 0.0 < ratio < 1.0:
        raise AttentionConfigError(f"attention {name} must be in (0, 1) exclusive, got {value!r}")
    return ratio


def _count(name: str, value: object, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise AttentionConfigError(
            f"attention {name} must be an integer, got {type(value).__name__}"
        )
    if value < minimum:
        raise AttentionConfigError(f"attention {name} must be >= {minimum}, got {value}")
    return value


def _exclude_tools(value: object) -> tuple[str, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise AttentionConfigError(
            f"attention exclude_tools must be a list of tool names, got {type(value).__name__}"
        )
    names: dict[str, None] = {}
    for index, name in enumerate(value):
        if not isinstance(name, str):
            raise AttentionConfigError(
                f"attention exclude_tools[{index}] must be a string, got {type(name).__name__}"
            )
        if not name.strip():
            raise AttentionConfigError(f"attention exclude_tools[{index}] must not be empty")
        if len(name) > MAX_TOOL_NAME_LENGTH:
            raise AttentionConfigError(
                f"attention exclude_tools[{index}] is longer than {MAX_TOOL_NAME_LENGTH} characters"
            )
        names[name] = None
        if len(names) > MAX_EXCLUDE_TOOLS:
            raise AttentionConfigError(
                f"attention exclude_tools holds more than {MAX_EXCLUDE_TOOLS} names"
            )
    return tuple(names)


@dataclass(frozen=True, slots=True)
class AttentionCompilerOptions:
    """Tuning of the attention gate; every field is validated here.

    ``policy`` says how deep a trip goes and whether the gate may act under
    the trigger (see :mod:`prism.attention.policy`): ``"deep"`` (default)
    keeps the reference's contract that nothing changes under
    ``trigger_ratio`` and reduces everything eligible when it trips;
    ``"proactive"`` may also act from ``proactive_floor`` of the cap up, at
    a tool result, when that pays for itself; ``"reference"`` stops as soon
    as the request is under the trigger. ``target_ratio`` fixes the depth of
    a trip instead. ``tool_result_fold`` (agent config only, not JSON)
    summarizes picked tool results instead of the digest stub.
    ``incremental`` and ``persist_frontier`` go beyond the original and are
    off by default.
    """

    trigger_ratio: float = 0.75
    compact_ratio: float = 0.9
    thinking_keep_turns: int = 1
    keep_last: int = 3
    exclude_tools: tuple[str, ...] = field(default=())
    max_input_tokens: int | None = None
    reserve_tokens: int = 1024
    target_ratio: float | None = None
    incremental: bool = False
    persist_frontier: bool = False
    policy: str = DEFAULT_POLICY
    proactive_floor: float = DEFAULT_PROACTIVE_FLOOR
    # A callable, so never on a wire; Python callers pass it by its name.
    tool_result_fold: ToolResultFold | None = field(default=None, metadata=NOT_JSON)

    def __post_init__(self) -> None:
        trigger = _ratio("trigger_ratio", self.trigger_ratio)
        compact = _ratio("compact_ratio", self.compact_ratio)
        if compact <= trigger:
            raise AttentionConfigError(
                f"attention compact_ratio ({compact}) must exceed trigger_ratio ({trigger})"
            )
        target = None
        if self.target_ratio is not None:
            target = _ratio("target_ratio", self.target_ratio)
            if target >= trigger:
                raise AttentionConfigError(
                    f"attention target_ratio ({target}) must be below trigger_ratio ({trigger})"
                )
        _count("thinking_keep_turns", self.thinking_keep_turns)
        _count("keep_last", self.keep_last)
        _count("reserve_tokens", self.reserve_tokens)
        if self.max_input_tokens is not None:
            _count("max_input_tokens", self.max_input_tokens, minimum=1)
        if not isinstance(self.incremental, bool):
            raise AttentionConfigError("attention incremental must be a bool")
        if not isinstance(self.persist_frontier, bool):
            raise AttentionConfigError("attention persist_frontier must be a bool")
        check_policy(self.policy)
        floor = _ratio("proactive_floor", self.proactive_floor)
        if floor >= trigger:
            raise AttentionConfigError(
                f"attention proactive_floor ({floor}) must be below trigger_ratio ({trigger})"
            )
        object.__setattr__(self, "proactive_floor", floor)
        object.__setattr__(self, "tool_result_fold", coerce_fold(self.tool_result_fold))
        # Frozen dataclass: normalise through object.__setattr__ once, here.
        object.__setattr__(self, "trigger_ratio", trigger)
        object.__setattr__(self, "compact_ratio", compact)
        object.__setattr__(self, "target_ratio", target)
        object.__setattr__(self, "exclude_tools", _exclude_tools(self.exclude_tools))

    @classmethod
    def from_json(cls, data: object) -> AttentionCompilerOptions:
        """Build from the original's camelCase form (config files, RPC params)."""
        return cls(**_fields_from_json(data))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, name in json_keys(AttentionCompilerOptions).items():
            value = getattr(self, name)
            if value is None:
                continue
            out[key] = list(value) if name == "exclude_tools" else value
        return out


def _fields_from_json(data: object) -> dict[str, Any]:
    return options_from_mapping(
        AttentionCompilerOptions, data, what="attention compiler", error=AttentionConfigError
    )


def coerce_options(options: object) -> AttentionCompilerOptions:
    """``None``/``True`` -> defaults; a mapping -> from_json; options as-is."""
    if options is None or options is True:
        return AttentionCompilerOptions()
    if isinstance(options, AttentionCompilerOptions):
        return options
    if isinstance(options, AttentionCompiler):
        return options.options
    if isinstance(options, Mapping):
        return AttentionCompilerOptions.from_json(options)
    raise AttentionConfigError(
        "attention compiler must be True, AttentionCompilerOptions, a mapping or an "
        f"AttentionCompiler, got {type(options).__name__}"
    )


def _limit(model: Mapping[str, Any], name: str) -> int | None:
    limits = model.get("limits")
    if limits is None:
        return None
    if not isinstance(limits, Mapping):
        raise AttentionConfigError("model.limits must be an object")
    value = limits.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise AttentionConfigError(
            f"model.limits.{name} must be a non-negative integer, got {value!r}"
        )
    return value


def resolve_input_cap(options: object = None, model: Mapping[str, Any] | None = None) -> int:
    """The token cap the ratios apply to, failing closed.

    ``max_input_tokens`` wins; otherwise ``contextWindow - maxOutputTokens -
    reserve_tokens`` from ``model["limits"]``. Raises ``TypeError``
    (:class:`AttentionConfigError`) when neither source exists, a declared limit
    is malformed, or the result is not positive.
    """
    opts = coerce_options(options)
    if opts.max_input_tokens is not None:
        return opts.max_input_tokens
    if model is None:
        raise AttentionConfigError(
            "attention input cap needs max_input_tokens or model.limits.contextWindow"
        )
    if not isinstance(model, Mapping):
        raise AttentionConfigError(f"model must be an object, got {type(model).__name__}")
    window = _limit(model, "contextWindow")
    if window is None:
        raise AttentionConfigError(
            "attention input cap needs max_input_tokens or model.limits.contextWindow"
        )
    output = _limit(model, "maxOutputTokens") or 0
    cap = window - output - opts.reserve_tokens
    if cap <= 0:
        raise AttentionConfigError(
            f"attention input cap is not positive ({window} - {output} - "
            f"{opts.reserve_tokens} = {cap})"
        )
    return cap


@dataclass(frozen=True, slots=True)
class AttentionCompiler:
    """A validated, frozen compiler handle: options plus the resolved cap.

    Performs no I/O. Build it with :func:`create_attention_compiler`.
    """

    options: AttentionCompilerOptions
    input_cap: int
    # Reducible tokens per kept token at which a proactive trip pays for
    # itself, from the model's cache pricing (policy.proactive_ratio).
    proactive_ratio: float = proactive_ratio(*cache_multipliers(None))

    @property
    def policy(self) -> str:
        return self.options.policy

    @property
    def proactive_floor(self) -> float:
        return self.options.proactive_floor

    @property
    def tool_result_fold(self) -> ToolResultFold | None:
        return self.options.tool_result_fold

    @property
    def trip_target_ratio(self) -> float | None:
        """The depth of a trip at the trigger as the native planner takes it:
        the fixed ``target_ratio`` when set, ``None`` (just under the trigger)
        for the reference policy, else 0 (everything eligible)."""
        if self.options.target_ratio is not None:
            return self.options.target_ratio
        return None if self.options.policy == "reference" else 0.0

    @property
    def trigger_ratio(self) -> float:
        return self.options.trigger_ratio

    @property
    def compact_ratio(self) -> float:
        return self.options.compact_ratio

    @property
    def target_ratio(self) -> float | None:
        return self.options.target_ratio

    @property
    def thinking_keep_turns(self) -> int:
        return self.options.thinking_keep_turns

    @property
    def keep_last(self) -> int:
        return self.options.keep_last

    @property
    def exclude_tools(self) -> tuple[str, ...]:
        return self.options.exclude_tools

    @property
    def reserve_tokens(self) -> int:
        return self.options.reserve_tokens

    @property
    def incremental(self) -> bool:
        return self.options.incremental

    @property
    def persist_frontier(self) -> bool:
        return self.options.persist_frontier

    def overlay(self, run_options: object) -> AttentionCompiler | None:
        """Apply a run's ``attention_compiler`` setting; it may only narrow.

        ``False`` disables the compiler for the run (returns ``None``);
        ``None``/``True`` keep this handle; a mapping or options object may raise
        ratios, lower keep counts and add ``exclude_tools``, nothing else.
        """
        if run_options is False:
            return None
        if run_options is None or run_options is True:
            return self
        changes = _overlay_fields(self.options, run_options)
        if not changes:
            return self
        return AttentionCompiler(
            _narrow(self.options, changes), self.input_cap, self.proactive_ratio
        )


def _overlay_fields(base: AttentionCompilerOptions, run_options: object) -> dict[str, Any]:
    if isinstance(run_options, AttentionCompiler):
        run_options = run_options.options
    if isinstance(run_options, AttentionCompilerOptions):
        # A dataclass cannot say which fields were set. A field equal to the
        # agent's changes nothing; one left at its default counts only when
        # it narrows, so an unmentioned default never reads as widening.
        defaults = AttentionCompilerOptions()
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(AttentionCompilerOptions):
            value = getattr(run_options, f.name)
            if value == getattr(base, f.name):
                continue
            if value == getattr(defaults, f.name):
                try:
                    _narrow(base, {f.name: value})
                except AttentionConfigError:
                    continue
            changes[f.name] = value
        return changes
    if isinstance(run_options, Mapping):
        return _fields_from_json(run_options)
    raise AttentionConfigError(
        "run attention_compiler must be False, True, a mapping or AttentionCompilerOptions, "
        f"got {type(run_options).__name__}"
    )


# Policy and summarizer change what a trip does, not how much of it; a run
# may not swap them (the sticky frontier and the fold cache are shared).
_AGENT_ONLY = ("policy", "proactive_floor", "tool_result_fold")


def _narrow(base: AttentionCompilerOptions, changes: dict[str, Any]) -> AttentionCompilerOptions:
    merged: dict[str, Any] = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    for name, value in changes.items():
        if name in ("max_input_tokens", "reserve_tokens"):
            raise AttentionConfigError(
                f"run attention overlay may not set {name}: the input cap is agent config only"
            )
        if name in _AGENT_ONLY and value != getattr(base, name):
            raise AttentionConfigError(
                f"run attention overlay may not set {name}: it is agent config only"
            )
        if name == "persist_frontier" and value != base.persist_frontier:
            raise AttentionConfigError(
                "run attention overlay may not set persist_frontier: the session's "
                "checkpoints are agent config only"
            )
        if name in ("trigger_ratio", "compact_ratio"):
            ratio = _ratio(name, value)
            if ratio < getattr(base, name):
                raise AttentionConfigError(
                    f"run attention overlay may only raise {name} "
                    f"({ratio} < agent {getattr(base, name)})"
                )
            merged[name] = ratio
        elif name in ("keep_last", "thinking_keep_turns"):
            count = _count(name, value)
            if count > getattr(base, name):
                raise AttentionConfigError(
                    f"run attention overlay may only lower {name} "
                    f"({count} > agent {getattr(base, name)})"
                )
            merged[name] = count
        elif name == "exclude_tools":
            merged[name] = base.exclude_tools + _exclude_tools(value)
        elif name == "target_ratio":
            if value is not None:
                target = _ratio(name, value)
                if base.target_ratio is None or target < base.target_ratio:
                    raise AttentionConfigError(
                        "run attention overlay may only raise target_ratio above the agent's"
                    )
            merged[name] = value
        else:
            merged[name] = value
    if (
        "trigger_ratio" in changes
        and "compact_ratio" not in changes
        and merged["trigger_ratio"] >= merged["compact_ratio"]
    ):
        raise AttentionConfigError(
            "run attention overlay raises trigger_ratio to or above compact_ratio; "
            "raise compact_ratio in the same overlay"
        )
    if merged["target_ratio"] is not None and merged["target_ratio"] >= merged["trigger_ratio"]:
        merged["target_ratio"] = None  # the raised gate already sits at/below the target
    return AttentionCompilerOptions(**merged)


def resolve_run_compiler(
    agent_compiler: AttentionCompiler | None, run_options: object
) -> AttentionCompiler | None:
    """The compiler for one run: the agent's, narrowed or disabled by the run.

    A run may disable or relax the compiler, never switch it on.
    """
    if agent_compiler is None:
        if run_options is None or run_options is False:
            return None
        raise AttentionConfigError(
            "attention_compiler cannot be enabled from a run; set it on the agent"
        )
    return agent_compiler.overlay(run_options)


def create_attention_compiler(
    options: object = None,
    *,
    model: Mapping[str, Any] | None = None,
    compaction_trigger: object = None,
) -> AttentionCompiler:
    """Validate options, resolve the input cap and return a frozen handle.

    ``compaction_trigger`` is checked here so an unknown trigger type or an
    ``input_ratio`` at or below ``trigger_ratio`` fails at create time.
    """
    if isinstance(options, AttentionCompiler) and model is None:
        compiler = options
    else:
        opts = coerce_options(options)
        compiler = AttentionCompiler(
            opts, resolve_input_cap(opts, model), proactive_ratio(*cache_multipliers(model))
        )
    if compaction_trigger is not None:
        from prism.attention.triggers import assert_compaction_trigger

        assert_compaction_trigger(compaction_trigger)
        assert isinstance(compaction_trigger, Mapping)
        if compaction_trigger.get("type") == "input_ratio":
            ratio = float(compaction_trigger["ratio"])
            if ratio <= compiler.trigger_ratio:
                raise AttentionConfigError(
                    f"compaction input_ratio ({ratio}) must exceed the attention "
                    f"trigger_ratio ({compiler.trigger_ratio})"
                )
    return compiler
