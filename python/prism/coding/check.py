"""``check``: run a host-configured command (tests, a linter, a type checker)
and turn its output into diagnostics the model can act on.

The model picks a check by name; it cannot run anything else through this
tool. Parsers cover pytest, ruff, mypy, tsc and cargo, plus a generic
``path:line[:col]: message`` form; the raw output's tail is kept too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from prism.coding.shell import run_command
from prism.coding.workspace import CodingToolError, CodingWorkspace
from prism.tools.definition import ToolContext, ToolDefinition

CheckFormat = Literal["auto", "pytest", "ruff", "mypy", "tsc", "cargo", "generic"]
MAX_DIAGNOSTICS = 100
TAIL_CHARS = 2000


@dataclass(frozen=True, slots=True)
class CheckCommand:
    argv: tuple[str, ...]
    format: CheckFormat = "auto"
    timeout: float = 600.0

    def __post_init__(self) -> None:
        if isinstance(self.argv, str) or not self.argv:
            raise ValueError("a check's argv must be a non-empty sequence of strings")
        object.__setattr__(self, "argv", tuple(self.argv))


Diagnostic = dict[str, Any]

_MYPY = re.compile(
    r"^(?P<file>[^:\s][^:]*):(?P<line>\d+)(?::(?P<col>\d+))?: (?P<sev>error|warning|note): (?P<msg>.*)$"
)
_RUFF = re.compile(
    r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<msg>.*)$"
)
_TSC = re.compile(
    r"^(?P<file>[^(\s][^(]*)\((?P<line>\d+),(?P<col>\d+)\): (?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$"
)
_CARGO_HEAD = re.compile(r"^(?P<sev>error|warning)(?:\[(?P<code>\w+)\])?: (?P<msg>.*)$")
_CARGO_AT = re.compile(r"^\s*--> (?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+)$")
_PYTEST_FAILED = re.compile(
    r"^(?:FAILED|ERROR) (?P<file>[^:\s]+)(?:::(?P<test>\S+))?(?: - (?P<msg>.*))?$"
)
_PYTEST_AT = re.compile(
    r"^(?P<file>[^:\s]+\.py):(?P<line>\d+): (?P<msg>\w+(?:Error|Exception|Failed)\b.*)$"
)
_GENERIC = re.compile(
    r"^(?P<file>[^:\s][^:]*\.\w+):(?P<line>\d+)(?::(?P<col>\d+))?:\s*(?P<msg>.+)$"
)


def _diag(match: re.Match[str], severity: str | None = None, **extra: Any) -> Diagnostic:
    found = match.groupdict()
    diag: Diagnostic = {
        "file": found.get("file"),
        "line": int(found["line"]) if found.get("line") else None,
        "severity": severity or found.get("sev") or "error",
        "message": (found.get("msg") or "").strip(),
    }
    if found.get("col"):
        diag["column"] = int(found["col"])
    if found.get("code"):
        diag["code"] = found["code"]
    diag.update(extra)
    return diag


def _parse_cargo(lines: Sequence[str]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    pending: re.Match[str] | None = None
    for line in lines:
        head = _CARGO_HEAD.match(line)
        if head:
            pending = head
            continue
        at = _CARGO_AT.match(line)
        if at and pending is not None:
            diag = _diag(at, pending["sev"])
            diag["message"] = pending["msg"]
            if pending["code"]:
                diag["code"] = pending["code"]
            out.append(diag)
            pending = None
    return out


def _parse_pytest(lines: Sequence[str]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for line in lines:
        failed = _PYTEST_FAILED.match(line)
        if failed:
            out.append(
                _diag(failed, "error", **({"test": failed["test"]} if failed["test"] else {}))
            )
            continue
        at = _PYTEST_AT.match(line)
        if at:
            out.append(_diag(at, "error"))
    return out


def _by_regex(
    lines: Sequence[str], pattern: re.Pattern[str], severity: str | None
) -> list[Diagnostic]:
    return [_diag(m, severity) for line in lines if (m := pattern.match(line))]


def parse_diagnostics(output: str, fmt: CheckFormat, program: str = "") -> list[Diagnostic]:
    """Diagnostics found in ``output`` for a format (``auto``: by program name)."""
    lines = output.splitlines()
    chosen: str = fmt
    if fmt == "auto":
        name = program.rsplit("/", 1)[-1]
        chosen = name if name in ("pytest", "ruff", "mypy", "tsc", "cargo") else "generic"
        if chosen == "generic" and name.startswith("python") and "pytest" in output[:2000]:
            chosen = "pytest"
    if chosen == "pytest":
        return _parse_pytest(lines)
    if chosen == "ruff":
        return _by_regex(lines, _RUFF, "error")
    if chosen == "mypy":
        return _by_regex(lines, _MYPY, None)
    if chosen == "tsc":
        return _by_regex(lines, _TSC, None)
    if chosen == "cargo":
        return _parse_cargo(lines)
    return _by_regex(lines, _GENERIC, "error")


def check_tool(
    ws: CodingWorkspace,
    checks: Mapping[str, CheckCommand | Sequence[str]],
    *,
    name: str = "check",
) -> ToolDefinition:
    commands: dict[str, CheckCommand] = {}
    for key, value in checks.items():
        if isinstance(value, str):
            raise ValueError(f"check {key!r}: give argv as a list, not the string {value!r}")
        commands[key] = value if isinstance(value, CheckCommand) else CheckCommand(tuple(value))
    if not commands:
        raise ValueError("check_tool needs at least one configured check")

    async def execute(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        check = commands.get(args["name"])
        if check is None:
            raise CodingToolError(f"no check named {args['name']!r}; known: {sorted(commands)}")
        result = await run_command(ws, ctx, name, check.argv, cwd=None, timeout=check.timeout)
        output = ws.redactor.redact_text(result.output)
        diagnostics = parse_diagnostics(output, check.format, check.argv[0])
        value: dict[str, Any] = {
            "name": args["name"],
            "exit_code": result.exit_code,
            "passed": result.exit_code == 0,
            "diagnostics": diagnostics[:MAX_DIAGNOSTICS],
            "diagnostic_count": len(diagnostics),
            "tail": output[-TAIL_CHARS:],
        }
        if result.timed_out:
            value["note"] = f"timed out after {check.timeout:g} s"
        return value

    return ToolDefinition(
        name,
        execute,
        description=f"Run a configured check ({', '.join(sorted(commands))}) and get diagnostics.",
        parameters={
            "type": "object",
            "properties": {"name": {"type": "string", "enum": sorted(commands)}},
            "required": ["name"],
            "additionalProperties": False,
        },
        exclusive=True,
    )
