"""The real ``prism`` at its edges: links in an init directory, package
names that shadow what a project imports, an --agent factory that exits or
prints, URLs with line breaks, and closed standard streams."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.cli.conftest import SAFETY_TIMEOUT, prism_executable

# --- prism init ----------------------------------------------------------------------


def test_init_force_never_writes_through_a_symlink(prism_run: Any, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "README.md").symlink_to(outside)
    done = prism_run("init", str(project), "--force")
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.count("\n") == 1 and "README.md is a symbolic link" in err, err
    assert outside.read_text() == "precious\n"
    assert sorted(p.name for p in project.iterdir()) == ["README.md"]  # nothing written


def test_init_force_never_writes_through_a_linked_folder(prism_run: Any, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    (project / "tests").symlink_to(elsewhere, target_is_directory=True)
    done = prism_run("init", str(project), "--force")
    assert done.returncode == 2 and "tests is a symbolic link" in done.stderr.decode()
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("json", "standard library module 'json'"),
        ("prism", "'prism', which the project imports"),
        ("Tests", "'tests', which the project imports"),
        ("class", "Python keyword 'class'"),
    ],
)
def test_init_refuses_a_package_name_that_shadows(
    prism_run: Any, tmp_path: Path, name: str, fragment: str
) -> None:
    done = prism_run("init", str(tmp_path / name))
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.count("\n") == 1 and fragment in err and "choose another directory name" in err
    assert not (tmp_path / name).exists()


# --- --agent factories -----------------------------------------------------------------

FACTORIES = """
import os
import sys

from prism import create_mock_provider
from prism.providers import provider_done, provider_text_delta
from prism.runtime import create_agent


def quits():
    sys.exit(0)


def chatty():
    print("building the agent...")
    os.write(1, b"raw bytes from the factory\\n")
    return create_agent(
        model={"provider": "m", "model": "m"},
        provider=create_mock_provider(
            lambda request: [provider_text_delta("hello"), provider_done()], name="m"
        ),
    )
"""


def run_in(cwd: Path, env: dict[str, str], *args: str, stdin: bytes = b"") -> Any:
    return subprocess.run(
        [str(prism_executable()), *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )


@pytest.fixture
def factories(tmp_path: Path) -> Path:
    (tmp_path / "factories.py").write_text(FACTORIES)
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(3)\n")
    return tmp_path


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("factories:quits", "the factory called sys.exit(0)"),
        ("exits_on_import:build", "importing 'exits_on_import' called sys.exit(3)"),
    ],
)
def test_an_agent_factory_that_exits_is_an_error_not_a_silent_success(
    factories: Path, cli_env: dict[str, str], spec: str, fragment: str
) -> None:
    done = run_in(factories, cli_env, "--agent", spec, "-p", "hi")
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.count("\n") == 1 and fragment in err, err
    assert done.stdout == b""


def test_what_an_agent_factory_prints_stays_out_of_the_rpc_stream(
    factories: Path, cli_env: dict[str, str]
) -> None:
    request = {"id": 1, "command": "prompt", "params": {"input": "hi"}}
    done = run_in(
        factories,
        cli_env,
        "--mode",
        "rpc",
        "--agent",
        "factories:chatty",
        stdin=json.dumps(request).encode() + b"\n",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    messages = [json.loads(line) for line in lines]  # every stdout line is protocol
    assert any(m.get("id") == 1 and m.get("ok") is True for m in messages), messages
    assert b"building the agent..." in done.stderr
    assert b"raw bytes from the factory" in done.stderr


def test_what_an_agent_factory_prints_stays_out_of_the_answer(
    factories: Path, cli_env: dict[str, str]
) -> None:
    done = run_in(factories, cli_env, "--agent", "factories:chatty", "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "hello"


# --- URLs and model ids with blanks ---------------------------------------------------


@pytest.fixture
def config_env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The user config file under the test's own directory, never ~/.config."""
    cli_env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    cli_env.pop("OPENAI_BASE_URL", None)
    return cli_env


def config_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "prism" / "config.json"


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/v1\r\nX-Evil: 1", "http://h/v1 x", "http://h\n/v1"]
)
def test_base_url_with_blanks_is_refused_up_front(
    prism_run: Any, config_env: dict[str, str], url: str
) -> None:
    env_key = {"OPENAI_API_KEY": "k"}
    done = subprocess.run(
        [str(prism_executable()), "--provider", "openai", "--base-url", url, "-p", "hi"],
        env={**config_env, **env_key},
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert b"--base-url must not contain spaces, tabs, line breaks" in done.stderr
    added = prism_run("providers", "add", "openai", "--base-url", url)
    assert added.returncode == 2 and b"line breaks" in added.stderr
    assert not config_file(config_env).exists()


def test_providers_add_refuses_a_model_with_blanks(
    prism_run: Any, config_env: dict[str, str]
) -> None:
    done = prism_run("providers", "add", "openai", "--model", "gpt-4o\nmini")
    assert done.returncode == 2
    assert b"--model must not contain spaces, tabs, line breaks" in done.stderr
    assert not config_file(config_env).exists()


def test_a_hand_edited_base_url_with_a_line_break_is_refused(
    prism_run: Any, config_env: dict[str, str]
) -> None:
    assert prism_run("providers", "add", "openai").returncode == 0
    config = config_file(config_env)
    data = json.loads(config.read_text())
    data["providers"]["openai"]["baseUrl"] = "http://h/v1\nx"
    config.write_text(json.dumps(data))
    done = subprocess.run(
        [str(prism_executable()), "--provider", "openai", "-p", "hi"],
        env={**config_env, "OPENAI_API_KEY": "k"},
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert b"providers.openai.baseUrl must not contain" in done.stderr


# --- closed standard streams -----------------------------------------------------------


def run_closed(
    env: dict[str, str], cwd: Path, close: int, *args: str
) -> subprocess.CompletedProcess[bytes]:
    """``prism`` started in ``cwd`` by a shell with descriptor ``close`` (0
    or 1) closed: ``prism ... <&-`` or ``prism ... >&-``."""
    redirect = "<&-" if close == 0 else ">&-"
    return subprocess.run(
        ["sh", "-c", f'exec "$0" "$@" {redirect}', str(prism_executable()), *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [["-p", "hi"], ["--mode", "json", "-p", "hi"], ["--mode", "rpc"], ["init", "x"], ["--help"]],
)
def test_a_closed_stdout_is_a_clear_error(
    cli_env: dict[str, str], tmp_path: Path, args: list[str]
) -> None:
    done = run_closed(cli_env, tmp_path, 1, *args)
    assert done.returncode == 2
    assert done.stderr == (
        b"prism: error: standard output is closed; prism writes its output there "
        b"(redirect it to a file or /dev/null instead)\n"
    )


def test_a_closed_stdin_reads_as_empty(cli_env: dict[str, str], tmp_path: Path) -> None:
    rpc = run_closed(cli_env, tmp_path, 0, "--mode", "rpc")
    assert (rpc.returncode, rpc.stdout, rpc.stderr) == (0, b"", b"")
    printed = run_closed(cli_env, tmp_path, 0, "-p", "hi")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith(b"Mock reply to: hi")
    missing = run_closed(cli_env, tmp_path, 0)
    assert missing.returncode == 2 and b"-p/--prompt is required" in missing.stderr
    assert b"AttributeError" not in missing.stderr


def test_an_openai_base_url_variable_with_a_line_break_is_named(
    config_env: dict[str, str],
) -> None:
    done = subprocess.run(
        [str(prism_executable()), "--provider", "openai", "-p", "hi"],
        env={**config_env, "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://h/v1\r\n"},
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert b"OPENAI_BASE_URL must not contain spaces, tabs, line breaks" in done.stderr
