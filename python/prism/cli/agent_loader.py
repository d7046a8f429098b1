"""``--agent package.module:factory``: the host's own agent in the CLI.

The factory is imported and called once, before anything is served; it
returns an :class:`~prism.runtime.Agent` (or an awaitable of one) with the
host's tools, middleware, stores and provider. Every way this can go wrong
is a usage problem naming the spec, on one line.

Like ``python -m``, the current directory is importable, so
``prism --agent myapp.agent:build`` works from a project checkout even
through the console script.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from prism.cli.usage import UsageProblem

_SPEC = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")

# Flags that configure the CLI's own agent: with --agent the host's agent
# already decided these, so giving one is a mistake worth saying.
_AGENT_FLAGS: dict[str, str] = {
    "provider": "--provider",
    "model": "--model",
    "system": "--system",
    "context": "--context",
    "compact": "--compact",
    "compaction": "--compaction",
    "summary_model": "--summary-model",
    "max_tool_rounds": "--max-tool-rounds",
    "mock_delay_ms": "--mock-delay-ms",
    "base_url": "--base-url",
    "api_key_env": "--api-key-env",
    "memory": "--memory",
    "memory_model": "--memory-model",
}


def check_agent_spec(spec: str, given: Mapping[str, Any]) -> str:
    """``spec`` if it reads ``module:attribute`` and no flag in ``given``
    (name -> value, ``None`` when not given) configures an agent."""
    if not _SPEC.fullmatch(spec):
        raise UsageProblem(f"--agent must look like package.module:factory (got {spec!r})")
    for name, flag in _AGENT_FLAGS.items():
        if given.get(name) is not None:
            raise UsageProblem(
                f"--agent {spec} brings its own agent; {flag} does not apply "
                "(configure it in the factory)"
            )
    return spec


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """What the host's module and factory print goes to stderr: stdout
    carries the answer (print mode) or the RPC stream, where a stray line
    would be read as a broken message. Redirected at the descriptor too, so
    C extensions and ``os.write(1, ...)`` are caught as well."""
    saved: int | None = None
    with contextlib.suppress(AttributeError, ValueError, OSError):
        if sys.stdout is not None:
            sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            with contextlib.suppress(AttributeError, ValueError, OSError):
                if sys.stderr is not None:
                    sys.stderr.flush()
            os.dup2(saved, 1)
            os.close(saved)


def _exit_problem(spec: str, where: str, exit: SystemExit) -> UsageProblem:
    return UsageProblem(
        f"--agent {spec}: {where} called sys.exit({exit.code!r}) instead of returning an Agent"
    )


async def load_agent(spec: str) -> Any:
    """Import ``module``, call ``factory()`` (awaiting it if it is async) and
    check that it returned an Agent. Both run with stdout sent to stderr."""
    with _stdout_to_stderr():
        return await _load_agent(spec)


async def _load_agent(spec: str) -> Any:
    from prism.runtime import Agent

    module_name, _, attribute = spec.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: Any = importlib.import_module(module_name)
    except SystemExit as exit:
        raise _exit_problem(spec, f"importing {module_name!r}", exit) from None
    except Exception as error:
        raise UsageProblem(
            f"--agent {spec}: cannot import {module_name!r}: {type(error).__name__}: {error}"
        ) from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise UsageProblem(f"--agent {spec}: {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    if isinstance(target, Agent):
        return target
    if not callable(target):
        raise UsageProblem(
            f"--agent {spec}: {attribute!r} is a {type(target).__name__}, "
            "not a factory returning an Agent"
        )
    try:
        agent = target()
        if inspect.isawaitable(agent):
            agent = await agent
    except SystemExit as exit:
        raise _exit_problem(spec, "the factory", exit) from None
    except Exception as error:
        raise UsageProblem(
            f"--agent {spec}: the factory raised {type(error).__name__}: {error}"
        ) from None
    if not isinstance(agent, Agent):
        raise UsageProblem(
            f"--agent {spec}: the factory returned a {type(agent).__name__}, not an Agent "
            "(use prism.runtime.create_agent)"
        )
    return agent
