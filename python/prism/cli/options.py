"""Validated CLI options: what the flags (and an explicit --config) mean.

Every check here runs before anything executes, and a failure is a
``UsageProblem`` that ``prism.cli.main`` turns into one stderr line and exit
code 2.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from prism.cli.usage import UsageProblem as UsageProblem
from prism.cli.usage import has_blank_or_control

Mode = Literal["print", "json", "rpc"]
MODES: tuple[Mode, ...] = ("print", "json", "rpc")
MAX_MOCK_DELAY_MS = 600_000
MAX_SESSION_ID_CHARS = 256
# --compaction values; the strategies' registered names are accepted too.
COMPACTION_STRATEGIES: dict[str, str] = {
    "default": "default",
    "default-compaction": "default",
    "llm": "llm",
    "llm-compaction": "llm",
}
MEMORY_KINDS: tuple[str, ...] = ("observational",)


@dataclass(frozen=True, slots=True)
class CliOptions:
    mode: Mode = "print"
    prompt: str | None = None
    provider: str = "mock"
    model: str | None = None
    session: str | None = None
    config_path: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    resources: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    system: str | None = None
    context: str | None = None
    compact: int | None = None
    compaction: str = "default"
    summary_model: str | None = None
    max_tool_rounds: int | None = None
    mock_delay_ms: int = 0
    base_url: str | None = None
    api_key_env: str | None = None
    memory: str | None = None
    memory_model: str | None = None
    otel: bool = False
    # --agent package.module:factory: the host's own agent replaces the one
    # the flags would build (prism.cli.agent_loader).
    agent: str | None = None
    durable: bool = False  # runs write checkpoints (docs/durable.md)
    resume: bool = False  # continue the session's unfinished durable run
    verbose: bool = False  # prism.* log records at DEBUG on stderr
    # How a run paused for approval is answered (prism.cli.approvals):
    # None asks on a terminal and otherwise stops with the waiting report.
    approvals: Literal["approve", "deny"] | None = None

    def recorded(self) -> dict[str, Any]:
        """The flags the CLI records but never loads (see docs/cli.md)."""
        return {
            "config": self.config_path,
            "resources": list(self.resources),
            "extensions": list(self.extensions),
            "tools": list(self.tools),
        }


def validate_session_id(value: str, *, what: str = "--session") -> str:
    if not value:
        raise UsageProblem(f"{what} must not be empty")
    if len(value) > MAX_SESSION_ID_CHARS:
        raise UsageProblem(f"{what} is longer than {MAX_SESSION_ID_CHARS} characters")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise UsageProblem(f"{what} must not contain control characters")
    return value


def _non_empty(values: list[str] | None, flag: str) -> tuple[str, ...]:
    out = tuple(values or ())
    if any(not v.strip() for v in out):
        raise UsageProblem(f"{flag} must not be empty")
    return out


# Config keys the CLI honours (JSON type, as named in messages); a flag given
# on the command line wins.
_CONFIG_KEYS: dict[str, tuple[type, str]] = {
    "provider": (str, "string"),
    "model": (str, "string"),
    "system": (str, "string"),
    "context": (str, "string"),
    "maxToolRounds": (int, "integer"),
    "compact": (int, "integer"),
    "baseUrl": (str, "string"),
    "apiKeyEnv": (str, "string"),
    "compaction": (str, "string"),
    "summaryModel": (str, "string"),
}


def _config_value(config: dict[str, Any], key: str, path: str) -> Any:
    if key not in config:
        return None
    value = config[key]
    expected, label = _CONFIG_KEYS[key]
    if isinstance(value, bool) or not isinstance(value, expected):
        raise UsageProblem(f"--config {path}: key {key!r} must be a JSON {label}")
    return value


def load_config(path: str) -> dict[str, Any]:
    """Read the one file --config names, failing closed with path + reason."""
    from prism.cli.config import read_cli_config

    try:
        return read_cli_config(path)
    except ValueError as exc:  # names path and reason, never the contents
        raise UsageProblem(f"--config: {exc}") from None


def build_options(
    *,
    mode: str,
    prompt: str | None,
    provider: str | None,
    model: str | None,
    session: str | None,
    config: str | None,
    resources: list[str] | None,
    extensions: list[str] | None,
    tools: list[str] | None,
    system: str | None,
    context: str | None,
    compact: int | None,
    max_tool_rounds: int | None,
    mock_delay_ms: int | None,
    known_providers: Callable[[], tuple[str, ...]],
    base_url: str | None = None,
    api_key_env: str | None = None,
    compaction: str | None = None,
    summary_model: str | None = None,
    memory: str | None = None,
    memory_model: str | None = None,
    otel: bool = False,
    agent: str | None = None,
    durable: bool = False,
    resume: bool = False,
    verbose: bool = False,
    approve_all: bool = False,
    deny_all: bool = False,
) -> CliOptions:
    """``known_providers`` is called only for a provider other than ``mock``:
    listing the presets imports the HTTP adapter, which a mock run never needs."""
    _check_mode_and_prompt(mode, prompt, session, durable=durable, resume=resume)
    # The flags a --config file may supply (a flag given wins).
    flags: dict[str, Any] = {
        "provider": provider,
        "model": model,
        "system": system,
        "context": context,
        "compact": compact,
        "compaction": compaction,
        "summary_model": summary_model,
        "max_tool_rounds": max_tool_rounds,
        "mock_delay_ms": mock_delay_ms,
        "base_url": base_url,
        "api_key_env": api_key_env,
        "memory": memory,
        "memory_model": memory_model,
    }
    config_data: dict[str, Any] = {}
    if config is not None:
        config_data = load_config(config)
        _fill_from_config(flags, config_data, config)
    agent = _check_agent(agent, flags)
    flags["provider"] = _check_provider(flags, known_providers)
    if session is not None:
        validate_session_id(session)
    _check_loop_flags(flags)
    _check_endpoint_flags(flags)
    _check_memory_flags(flags)
    _check_otel(otel)
    approvals = _approval_flags(mode, approve_all=approve_all, deny_all=deny_all)
    return CliOptions(
        mode=cast("Mode", mode),  # checked by _check_mode_and_prompt
        prompt=prompt,
        session=session,
        config_path=config,
        config=config_data,
        resources=_non_empty(resources, "--resource"),
        extensions=_non_empty(extensions, "--extension"),
        tools=_non_empty(tools, "--tool"),
        otel=otel,
        agent=agent,
        durable=durable or resume,
        resume=resume,
        verbose=verbose,
        approvals=approvals,
        **flags,
    )


def _check_mode_and_prompt(
    mode: str, prompt: str | None, session: str | None, *, durable: bool, resume: bool
) -> None:
    if mode not in MODES:
        raise UsageProblem(f"--mode must be one of {', '.join(MODES)} (got {mode!r})")
    if resume:
        if mode == "rpc":
            raise UsageProblem("--resume applies to print and json modes")
        if session is None:
            raise UsageProblem("--resume needs --session NAME (the session to resume)")
        if prompt is not None:
            raise UsageProblem(
                "-p/--prompt is not used with --resume (the run continues as it was)"
            )
        return
    if durable and session is None:
        raise UsageProblem("--durable needs --session NAME (checkpoints go to the session file)")
    if mode == "rpc":
        if prompt is not None:
            raise UsageProblem("-p/--prompt is not used in rpc mode; send prompt requests")
    elif prompt is None:
        raise UsageProblem(f"-p/--prompt is required in {mode} mode")
    elif not prompt.strip():
        raise UsageProblem("-p/--prompt must not be empty")


# build_options' flag -> its --config key.
_CONFIG_FLAGS: dict[str, str] = {
    "provider": "provider",
    "model": "model",
    "system": "system",
    "context": "context",
    "max_tool_rounds": "maxToolRounds",
    "compact": "compact",
    "base_url": "baseUrl",
    "api_key_env": "apiKeyEnv",
    "compaction": "compaction",
    "summary_model": "summaryModel",
}


def _fill_from_config(flags: dict[str, Any], config: dict[str, Any], path: str) -> None:
    for flag, key in _CONFIG_FLAGS.items():
        if flags[flag] is None:
            flags[flag] = _config_value(config, key, path)


def _check_provider(flags: dict[str, Any], known_providers: Callable[[], tuple[str, ...]]) -> str:
    provider: str = flags["provider"] if flags["provider"] is not None else "mock"
    if provider != "mock" and provider not in (names := known_providers()):
        raise UsageProblem(f"--provider {provider!r} is unknown (choose from {', '.join(names)})")
    model = flags["model"]
    if model is not None and not model.strip():
        raise UsageProblem("--model must not be empty")
    if model is not None and has_blank_or_control(model):
        # As `prism providers add` already refuses (provider_config.py).
        raise UsageProblem(
            "--model must not contain spaces, tabs, line breaks or control characters"
        )
    return provider


def _check_agent(agent: str | None, flags: dict[str, Any]) -> str | None:
    if agent is None:
        return None
    from prism.cli.agent_loader import check_agent_spec

    return check_agent_spec(agent, dict(flags))


def _check_loop_flags(flags: dict[str, Any]) -> None:
    """Compaction, tool rounds and the mock's delay; ``flags["compaction"]``
    becomes the strategy's name."""
    compact = flags["compact"]
    if compact is not None and compact < 1:
        raise UsageProblem(f"--compact must be at least 1 (got {compact})")
    compaction = flags["compaction"]
    strategy = COMPACTION_STRATEGIES.get(compaction or "default")
    if strategy is None:
        raise UsageProblem(f"--compaction must be default or llm (got {compaction!r})")
    summary_model = flags["summary_model"]
    if summary_model is not None:
        if strategy != "llm":
            raise UsageProblem("--summary-model only applies to --compaction llm")
        if not summary_model.strip():
            raise UsageProblem("--summary-model must not be empty")
    max_tool_rounds = flags["max_tool_rounds"]
    if max_tool_rounds is not None and max_tool_rounds < 0:
        raise UsageProblem(f"--max-tool-rounds must be 0 or more (got {max_tool_rounds})")
    mock_delay_ms = flags["mock_delay_ms"]
    if mock_delay_ms is not None:
        if flags["provider"] != "mock":
            raise UsageProblem("--mock-delay-ms only applies to --provider mock")
        if not 0 <= mock_delay_ms <= MAX_MOCK_DELAY_MS:
            raise UsageProblem(f"--mock-delay-ms must be between 0 and {MAX_MOCK_DELAY_MS}")
    flags["compaction"] = strategy
    flags["mock_delay_ms"] = mock_delay_ms or 0


def _check_endpoint_flags(flags: dict[str, Any]) -> None:
    """--base-url and --api-key-env, normalized in ``flags``."""
    base_url, api_key_env = flags["base_url"], flags["api_key_env"]
    if base_url is None and api_key_env is None:
        return
    from prism.cli.provider_config import check_api_key_env, check_base_url

    if flags["provider"] == "mock":
        raise UsageProblem("--base-url and --api-key-env apply to a real provider, not mock")
    flags["base_url"] = check_base_url(base_url) if base_url is not None else None
    flags["api_key_env"] = check_api_key_env(api_key_env) if api_key_env is not None else None


def _check_memory_flags(flags: dict[str, Any]) -> None:
    memory, memory_model = flags["memory"], flags["memory_model"]
    if memory is not None and memory not in MEMORY_KINDS:
        raise UsageProblem(f"--memory must be one of {', '.join(MEMORY_KINDS)} (got {memory!r})")
    if memory_model is not None:
        if memory is None:
            raise UsageProblem("--memory-model needs --memory observational")
        if not memory_model.strip():
            raise UsageProblem("--memory-model must not be empty")


def _check_otel(otel: bool) -> None:
    if not otel:
        return
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        raise UsageProblem(
            "--otel needs OpenTelemetry: pip install 'prism-harness[otel]'"
        ) from None


def _approval_flags(
    mode: str, *, approve_all: bool, deny_all: bool
) -> Literal["approve", "deny"] | None:
    if approve_all and deny_all:
        raise UsageProblem("--approve-all and --deny-all exclude each other")
    if (approve_all or deny_all) and mode == "rpc":
        raise UsageProblem(
            "--approve-all/--deny-all apply to print and json modes"
            " (an rpc client sends approve/deny requests)"
        )
    return "approve" if approve_all else "deny" if deny_all else None


def prism_home(environ: Mapping[str, str] | None = None) -> Path:
    """Where the CLI keeps its files: $PRISM_HOME, else $XDG_DATA_HOME/prism,
    else ~/.local/share/prism."""
    env = os.environ if environ is None else environ
    home = env.get("PRISM_HOME")
    if home:
        return Path(home)
    xdg = env.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg) / "prism"
    return Path.home() / ".local" / "share" / "prism"


def default_session_file(environ: Mapping[str, str] | None = None) -> Path:
    return prism_home(environ) / "sessions.jsonl"
