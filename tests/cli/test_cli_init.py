"""``prism init``: every template generates a project whose own tests pass,
keys stay out of files, and a non-empty destination is never clobbered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TEMPLATES = ("init", "personal-assistant", "business-worker", "deep-research")


def test_list_templates(prism_run: Any) -> None:
    done = prism_run("init", "--list-templates")
    assert done.returncode == 0
    names = [line.split(":")[0] for line in done.stdout.decode().splitlines()]
    assert names == list(TEMPLATES)


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("provider", ["mock", "openai"])
def test_generated_files(prism_run: Any, tmp_path: Path, template: str, provider: str) -> None:
    target = tmp_path / "My Agent"
    done = prism_run("init", str(target), "--template", template, "--provider", provider)
    assert done.returncode == 0, done.stderr
    assert (target / "my_agent" / "agent.py").is_file()
    assert (target / "tests" / "test_agent.py").is_file()
    pyproject = (target / "pyproject.toml").read_text()
    assert 'name = "my-agent"' in pyproject and "prism-harness>=" in pyproject
    ignored = (target / ".gitignore").read_text().splitlines()
    assert ".env" in ignored and "data/" in ignored and "*.jsonl" in ignored
    env_example = (target / ".env.example").read_text()
    assert "{{" not in env_example
    for line in env_example.splitlines():
        if line and not line.startswith("#"):
            _key, _, value = line.partition("=")
            assert value in ("your-api-key-here", "replace-with-a-long-random-value"), line
    agent = (target / "my_agent" / "agent.py").read_text()
    assert "{{" not in agent
    if provider == "openai":
        assert "OPENAI_API_KEY=your-api-key-here" in env_example
        assert 'get_provider_preset("openai")' in agent
        # The generated code builds its provider against this Prism (no request
        # is sent): an API change here used to surface only on a user's first run.
        built = subprocess.run(
            [sys.executable, "-c", "from my_agent.agent import create_provider as c; c()"],
            cwd=target,
            env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key-0123456789"},
            capture_output=True,
            text=True,
        )
        assert built.returncode == 0, built.stderr
    else:
        assert "create_mock_provider" in agent


def _pytest_projects(
    roots: list[Path], targets: list[Path], cwd: Path, verbosity: str
) -> subprocess.CompletedProcess[str]:
    """pytest over generated projects' ``targets``, each project importable
    (its root on PYTHONPATH), as a user of those projects would run it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [*(str(r) for r in roots), *filter(None, [env.get("PYTHONPATH")])]
    )
    command = [sys.executable, "-m", "pytest", verbosity, "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, "--import-mode=importlib", *(str(t) for t in targets)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_generated_projects_pass_their_own_tests(prism_run: Any, tmp_path: Path) -> None:
    roots = []
    for template in TEMPLATES:
        root = tmp_path / f"gen-{template}"
        # --with-evals adds files only: its projects run the template's own tests too.
        done = prism_run("init", str(root), "--template", template, "--with-evals")
        assert done.returncode == 0, done.stderr
        roots.append(root)
    done = _pytest_projects(roots, [r / "tests" for r in roots], tmp_path, "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout and "failed" not in done.stdout
    # One test per eval case, and the whole suite, in every project.
    assert done.stdout.count("test_evals.py::test_case[greets] PASSED") == len(TEMPLATES)
    assert done.stdout.count("test_evals.py::test_the_suite_passes") == len(TEMPLATES)
    for root in roots:
        assert "!evals/*.jsonl" in (root / ".gitignore").read_text()  # the dataset is kept


def test_refuses_a_non_empty_destination_without_force(prism_run: Any, tmp_path: Path) -> None:
    target = tmp_path / "proj"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    done = prism_run("init", str(target))
    assert done.returncode == 2 and b"not empty" in done.stderr
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    forced = prism_run("init", str(target), "--force")
    assert forced.returncode == 0, forced.stderr
    assert (target / "notes.txt").read_text() == "mine"
    assert (target / "proj" / "agent.py").is_file()
    again = prism_run("init", str(target))
    assert again.returncode == 2


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--template", "deep-search"], "unknown template 'deep-search'"),
        (["--provider", "acme"], "--provider 'acme' is unknown"),
        (["--bogus"], "init:"),
    ],
)
def test_bad_input_writes_nothing(
    prism_run: Any, tmp_path: Path, args: list[str], fragment: str
) -> None:
    target = tmp_path / "proj"
    done = prism_run("init", str(target), *args)
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.count("\n") == 1 and fragment in err, err
    assert not target.exists()


def test_dir_is_required(prism_run: Any) -> None:
    done = prism_run("init")
    assert done.returncode == 2 and b"DIR is required" in done.stderr


def test_a_file_as_destination_is_refused(prism_run: Any, tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    done = prism_run("init", str(target))
    assert done.returncode == 2 and b"not a directory" in done.stderr
    assert target.read_text() == "x"


@pytest.mark.parametrize("template", TEMPLATES)
def test_generated_readme_installs_prism_from_a_built_wheel(
    prism_run: Any, tmp_path: Path, template: str
) -> None:
    # prism-harness is not on an index yet: `pip install -e .` alone would fail.
    target = tmp_path / "proj"
    assert prism_run("init", str(target), "--template", template).returncode == 0
    readme = (target / "README.md").read_text(encoding="utf-8")
    wheel = readme.index("pip install /path/to/prism/dist/prism_harness-*.whl")
    assert wheel < readme.index("pip install -e '.[test]'")


def test_with_workflows_adds_a_workflow_that_passes_its_test_in_every_template(
    prism_run: Any, tmp_path: Path
) -> None:
    roots = []
    for template in TEMPLATES:
        root = tmp_path / f"wf-{template}"
        done = prism_run("init", str(root), "--template", template, "--with-workflows")
        assert done.returncode == 0, done.stderr
        package = f"wf_{template.replace('-', '_')}"
        assert (root / package / "workflow_example.py").is_file()
        assert (root / "tests" / "test_workflow_example.py").is_file()
        roots.append(root)
    plain = tmp_path / "plain"
    assert prism_run("init", str(plain)).returncode == 0
    assert not (plain / "tests" / "test_workflow_example.py").exists()
    done = _pytest_projects(
        roots, [r / "tests" / "test_workflow_example.py" for r in roots], tmp_path, "-q"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(TEMPLATES)} passed" in done.stdout
