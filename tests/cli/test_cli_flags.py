"""Flag parsing and validation of the installed ``prism`` script: usage
problems exit 2 with exactly one stderr line, print nothing on stdout and
write no session file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FLAGS = (
    "--prompt",
    "--mode",
    "--provider",
    "--model",
    "--session",
    "--config",
    "--resource",
    "--extension",
    "--tool",
    "--system",
    "--context",
    "--compact",
    "--compaction",
    "--summary-model",
    "--max-tool-rounds",
    "--mock-delay-ms",
    "--help",
)


def assert_usage_error(result: Any, *fragments: str) -> str:
    assert result.returncode == 2, result
    assert result.stdout == b""
    err: str = result.stderr.decode()
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("prism: error: "), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


def test_help_lists_every_flag(prism_run: Any) -> None:
    result = prism_run("--help")
    assert result.returncode == 0
    out = result.stdout.decode()
    for flag in FLAGS:
        assert flag in out, flag
    assert "-p" in out


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--bogus"], ["No such option", "--bogus"]),
        (["-p"], ["-p", "requires an argument"]),
        (["--mode", "yaml", "-p", "hi"], ["--mode", "'yaml'"]),
        (["--compact", "abc", "-p", "hi"], ["--compact"]),
        (["--compact", "0", "-p", "hi"], ["--compact must be at least 1"]),
        (["--max-tool-rounds", "-1", "-p", "hi"], ["--max-tool-rounds"]),
        (["--max-tool-rounds", "1.5", "-p", "hi"], ["--max-tool-rounds"]),
        (["--mock-delay-ms", "-5", "-p", "hi"], ["--mock-delay-ms"]),
        (["--mock-delay-ms", "600001", "-p", "hi"], ["--mock-delay-ms"]),
        (["--provider", "nope", "-p", "hi"], ["'nope'", "mock", "openai"]),
        ([], ["-p/--prompt is required"]),
        (["--mode", "json"], ["-p/--prompt is required in json mode"]),
        (["-p", "  "], ["must not be empty"]),
        (["--mode", "rpc", "-p", "hi"], ["not used in rpc mode"]),
        (["--session", "", "-p", "hi"], ["--session must not be empty"]),
        (["--session", "a\tb", "-p", "hi"], ["control characters"]),
        (["--model", "", "-p", "hi"], ["--model must not be empty"]),
        (["--model", "gpt 4", "-p", "hi"], ["--model must not contain spaces"]),
        (["--model", "m\nINFO forged", "-p", "hi"], ["--model must not contain spaces"]),
        (["--tool", "", "-p", "hi"], ["--tool must not be empty"]),
        (["-p", "hi", "extra"], ["unexpected extra argument"]),
        (["--provider", "openai", "--mock-delay-ms", "5", "-p", "hi"], ["--mock-delay-ms"]),
    ],
)
def test_invalid_flags_exit_2_with_one_line(
    prism_run: Any, prism_home: Path, args: list[str], fragments: list[str]
) -> None:
    assert_usage_error(prism_run(*args), *fragments)
    assert not prism_home.exists()  # nothing ran, nothing was written


def test_real_preset_without_key_names_the_env_var(prism_run: Any, prism_home: Path) -> None:
    assert_usage_error(
        prism_run("--provider", "openai", "-p", "hi", "--session", "s"), "OPENAI_API_KEY"
    )
    assert not prism_home.exists()


# --- --config -------------------------------------------------------------------------


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


SECRET_LOOKING = b"sk-canary-0123456789abcdef"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"model": "x", "token": "' + SECRET_LOOKING + b'"', "JSON"),
        (b'["' + SECRET_LOOKING + b'"]', "object"),
        (b"\xff\xfe" + SECRET_LOOKING, ""),
    ],
)
def test_bad_config_fails_closed_with_path_and_reason(
    prism_run: Any, tmp_path: Path, prism_home: Path, content: bytes, reason: str
) -> None:
    path = write(tmp_path / "bad.json", content)
    err = assert_usage_error(prism_run("--config", path, "-p", "hi", "--session", "s"), path)
    assert reason in err
    assert SECRET_LOOKING.decode() not in err
    assert not prism_home.exists()


def test_missing_config_and_directory_config(prism_run: Any, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.json")
    assert_usage_error(prism_run("--config", missing, "-p", "hi"), missing)
    assert_usage_error(prism_run("--config", str(tmp_path), "-p", "hi"), str(tmp_path))


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"maxToolRounds": "many"}, "maxToolRounds"),
        ({"compact": True}, "compact"),
        ({"provider": "nope"}, "'nope'"),
        ({"model": 3}, "model"),
    ],
)
def test_config_values_are_validated(
    prism_run: Any, tmp_path: Path, config: dict[str, Any], fragment: str
) -> None:
    path = write(tmp_path / "c.json", json.dumps(config).encode())
    assert_usage_error(prism_run("--config", path, "-p", "hi"), fragment)


def test_config_is_read_only_when_named(
    prism_run: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    # A broken file at the conventional user config path is never looked at.
    config_home = tmp_path / "xdg-config"
    (config_home / "prism").mkdir(parents=True)
    (config_home / "prism" / "config.json").write_bytes(b"{not json")
    cli_env["XDG_CONFIG_HOME"] = str(config_home)
    cli_env["HOME"] = str(tmp_path)
    result = prism_run("-p", "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"Mock reply to: hi (turn 1)"
