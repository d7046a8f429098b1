"""``prism init DIR``: write a small, runnable starter project.

Templates live beside this module (``templates/<name>/*.tmpl`` plus the
shared ``templates/_common``) and are rendered by plain ``{{name}}``
substitution. A generated project depends on ``prism-harness`` only, runs its
own tests against a scripted mock model, keeps keys out of files
(``.env.example`` holds placeholders; ``.gitignore`` excludes ``.env`` and
local stores), and names its provider's key variable.
"""

from __future__ import annotations

import argparse
import keyword
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from prism.cli.options import UsageProblem

TEMPLATES_DIR = Path(__file__).with_name("templates")
PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    summary: str
    # template file (relative to its folder) -> generated path; "{pkg}" is the package dir
    files: Mapping[str, str]
    env_lines: tuple[str, ...] = ()


_COMMON = {
    "_common/pyproject.toml.tmpl": "pyproject.toml",
    "_common/gitignore.tmpl": ".gitignore",
    "_common/package/__init__.py.tmpl": "{pkg}/__init__.py",
}

TEMPLATES: dict[str, Template] = {
    template.name: template
    for template in (
        Template(
            "init",
            "A minimal agent with one typed tool (default).",
            {
                **_COMMON,
                "init/agent.py.tmpl": "{pkg}/agent.py",
                "init/tests/test_agent.py.tmpl": "tests/test_agent.py",
                "init/README.md.tmpl": "README.md",
            },
        ),
        Template(
            "personal-assistant",
            "A single-user assistant: local status tools, a persistent session, secret redaction.",
            {
                **_COMMON,
                "personal-assistant/agent.py.tmpl": "{pkg}/agent.py",
                "personal-assistant/tests/test_agent.py.tmpl": "tests/test_agent.py",
                "personal-assistant/README.md.tmpl": "README.md",
            },
            (
                "# Variables whose values must never be stored or shown (comma-separated names):",
                "# ASSISTANT_SECRET_VARS=MY_BANK_TOKEN,MY_MAIL_PASSWORD",
                "# ASSISTANT_DATA_DIR=data",
            ),
        ),
        Template(
            "business-worker",
            "A multi-tenant worker: verified tenant on every run, tenant-scoped sessions and "
            "tools enforced by a permission policy, SQLite or PostgreSQL storage.",
            {
                **_COMMON,
                "business-worker/agent.py.tmpl": "{pkg}/agent.py",
                "business-worker/tenants.py.tmpl": "{pkg}/tenants.py",
                "business-worker/policy.py.tmpl": "{pkg}/policy.py",
                "business-worker/tests/test_agent.py.tmpl": "tests/test_agent.py",
                "business-worker/README.md.tmpl": "README.md",
            },
            (
                "# The key your gateway signs tenant tokens with (a long random value):",
                "TENANT_SIGNING_KEY=replace-with-a-long-random-value",
                "# PostgreSQL instead of the local SQLite file (needs prism-harness[postgres]):",
                "# DATABASE_URL=postgresql://worker@db.example/worker",
                "# WORKER_DATA_DIR=data",
            ),
        ),
        Template(
            "deep-research",
            "A research agent: plan, search, fetch, read, cite, refine (bounded), with a "
            "pluggable search backend and an SSRF-guarded web fetch.",
            {
                **_COMMON,
                "deep-research/agent.py.tmpl": "{pkg}/agent.py",
                "deep-research/research.py.tmpl": "{pkg}/research.py",
                "deep-research/search.py.tmpl": "{pkg}/search.py",
                "deep-research/read.py.tmpl": "{pkg}/read.py",
                "deep-research/tests/test_agent.py.tmpl": "tests/test_agent.py",
                "deep-research/README.md.tmpl": "README.md",
            },
        ),
    )
}


# Add-ons any template can take (``--with-workflows``, ``--with-evals``):
# files rendered like the template's own.
ADDONS: dict[str, Mapping[str, str]] = {
    "workflows": {
        "_addons/workflows/workflow_example.py.tmpl": "{pkg}/workflow_example.py",
        "_addons/workflows/test_workflow_example.py.tmpl": "tests/test_workflow_example.py",
    },
    # An eval suite, its dataset and its tests.
    "evals": {
        "_evals/evals.py.tmpl": "{pkg}/evals.py",
        "_evals/cases.jsonl.tmpl": "evals/cases.jsonl",
        "_evals/README.md.tmpl": "evals/README.md",
        "_evals/test_evals.py.tmpl": "tests/test_evals.py",
    },
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageProblem(f"init: {message}")


def _parser() -> _Parser:
    parser = _Parser(
        prog="prism init",
        description="Write a runnable starter project into DIR.",
        allow_abbrev=False,
    )
    parser.add_argument("dir", nargs="?", help="Destination directory (created if missing).")
    parser.add_argument("--template", default="init", metavar="NAME", help="Starter template.")
    parser.add_argument("--list-templates", action="store_true", help="List templates and exit.")
    parser.add_argument(
        "--provider", default="mock", metavar="NAME", help="mock (default) or a provider preset."
    )
    parser.add_argument(
        "--with-workflows",
        action="store_true",
        help="Add a durable workflow (prism.workflows) and its test.",
    )
    parser.add_argument(
        "--force", action="store_true", help="Write into a non-empty directory (overwrites)."
    )
    parser.add_argument(
        "--with-evals",
        action="store_true",
        help="Add an eval suite (prism eval) with its dataset and tests.",
    )
    return parser


def project_names(directory: Path) -> tuple[str, str]:
    """(distribution name, package name) from the directory's name; a name
    whose package would shadow a module the project imports is refused."""
    base = re.sub(r"[^a-z0-9]+", "-", directory.resolve().name.lower()).strip("-") or "agent"
    if base[0].isdigit():
        base = f"agent-{base}"
    package = base.replace("-", "_")
    _check_package_name(directory, base, package)
    return base, package


# Top-level names the generated project itself imports or is tested with, or
# that would clash with its own layout or its dependency.
_TAKEN = frozenset({"prism", "prism_harness", "pytest", "tests", "anyio", "pydantic", "httpx"})


def _check_package_name(directory: Path, project: str, package: str) -> None:
    if package in sys.stdlib_module_names:
        clash = f"the standard library module {package!r}"
    elif package in _TAKEN or project == "prism-harness":
        clash = f"{package!r}, which the project imports or uses for its layout"
    elif keyword.iskeyword(package) or keyword.issoftkeyword(package):
        clash = f"the Python keyword {package!r} (it cannot be imported)"
    else:
        return
    raise UsageProblem(
        f"init: the directory name {directory.resolve().name!r} would make a package named {package!r} "
        f"that shadows {clash}; choose another directory name"
    )


def _refuse_symlinks(directory: Path, relatives: Sequence[Path]) -> None:
    """--force overwrites files, never what a symbolic link in DIR points
    to (a file outside the project, say): every path about to be written and
    each folder on the way is checked before anything is written."""
    for relative in relatives:
        path = directory
        for part in relative.parts:
            path = path / part
            if path.is_symlink():
                raise UsageProblem(
                    f"init: {path} is a symbolic link; prism init does not write through "
                    "links (remove it, or choose an empty directory)"
                )


def _write_new(path: Path, text: str) -> None:
    # O_NOFOLLOW: a link planted after the check above still is not followed.
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        raise UsageProblem(f"init: cannot write {path}: {error.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _provider_values(provider: str) -> dict[str, str]:
    if provider == "mock":
        return {
            "provider_block": (TEMPLATES_DIR / "_common/providers/mock.py.tmpl").read_text(),
            "key_env": "",
            "provider_note": (
                "The model is a mock: it answers without a network. Run "
                "`prism init DIR --provider openai` (or another preset) for a real one, "
                "or edit `create_provider()`."
            ),
        }
    from prism.providers.packages import PROVIDER_PRESETS

    package = PROVIDER_PRESETS.get(provider)
    if package is None:
        names = ", ".join(["mock", *sorted(PROVIDER_PRESETS)])
        raise UsageProblem(f"init: --provider {provider!r} is unknown (choose from {names})")
    key_env = package.auth.env_vars[0]
    return {
        "provider_block": (TEMPLATES_DIR / "_common/providers/preset.py.tmpl").read_text(),
        "key_env": key_env,
        "provider_note": (
            f"The model is the `{provider}` preset: copy `.env.example` to `.env` and put "
            f"your key in `{key_env}` (`.env` is git-ignored). `PRISM_BASE_URL` points it at "
            "another OpenAI-compatible endpoint."
        ),
    }


def render(text: str, values: Mapping[str, str]) -> str:
    # Two passes: the provider block itself holds placeholders.
    for _ in range(2):
        text = PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)
    leftover = PLACEHOLDER.search(text)
    if leftover is not None:  # a template bug, not a user error
        raise RuntimeError(f"template placeholder {leftover.group(0)} has no value")
    return text


def env_example(template: Template, key_env: str) -> str:
    lines = ["# Copy to .env and fill in; .env is git-ignored. Placeholders only here."]
    if key_env:
        lines += [
            f"{key_env}=your-api-key-here",
            "# PRISM_BASE_URL=http://127.0.0.1:8000/v1",
            "# PRISM_MODEL=",
        ]
    lines += template.env_lines
    return "\n".join(lines) + "\n"


def generate(
    directory: Path,
    template_name: str,
    provider: str,
    *,
    force: bool,
    addons: Sequence[str] = (),
) -> list[Path]:
    """Write the project (with the named ``ADDONS``); the paths written,
    relative to ``directory``."""
    template = TEMPLATES.get(template_name)
    if template is None:
        raise UsageProblem(
            f"init: unknown template {template_name!r} (choose from {', '.join(TEMPLATES)})"
        )
    if directory.exists() and not directory.is_dir():
        raise UsageProblem(f"init: {directory} exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()) and not force:
        raise UsageProblem(f"init: {directory} is not empty (use --force to write into it)")
    from prism import __version__

    project, package = project_names(directory)
    values = {
        "project": project,
        "package": package,
        "template": template.name,
        "provider": provider,
        "description": template.summary,
        "prism_requirement": f">={__version__}",
        **_provider_values(provider),
    }
    values["env_loader"] = (
        '\n\ndef load_dotenv(path: str = ".env") -> None:\n'
        '    """Copy ``KEY=value`` lines of ``path`` into the environment (variables\n'
        '    already set win). Real keys go in .env, which .gitignore excludes."""\n'
        "    if not os.path.isfile(path):\n"
        "        return\n"
        '    with open(path, encoding="utf-8") as handle:\n'
        "        for line in handle:\n"
        "            line = line.strip()\n"
        '            if line and not line.startswith("#") and "=" in line:\n'
        '                key, value = line.split("=", 1)\n'
        "                os.environ.setdefault(key.strip(), value.strip())\n"
    )
    outputs: dict[Path, str] = {}
    files = dict(template.files)
    for addon in addons:
        files.update(ADDONS[addon])
    for source, target in files.items():
        text = (TEMPLATES_DIR / source).read_text(encoding="utf-8")
        outputs[Path(target.replace("{pkg}", package))] = render(text, values)
    outputs[Path(".env.example")] = env_example(template, values["key_env"])
    # Everything is rendered and checked before anything is written: a bad
    # template, provider or link leaves no half-made project behind.
    _refuse_symlinks(directory, list(outputs))
    for relative, text in outputs.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_new(path, text)
    return sorted(outputs)


def init_main(args: Sequence[str]) -> int:
    parsed = _parser().parse_args(list(args))
    if parsed.list_templates:
        for template in TEMPLATES.values():
            sys.stdout.write(f"{template.name}: {template.summary}\n")
        return 0
    if not parsed.dir:
        raise UsageProblem("init: DIR is required (or --list-templates)")
    directory = Path(parsed.dir)
    addons = [
        name
        for name, wanted in (("workflows", parsed.with_workflows), ("evals", parsed.with_evals))
        if wanted
    ]
    written = generate(
        directory, parsed.template, parsed.provider, force=parsed.force, addons=addons
    )
    sys.stdout.write(f"created {parsed.template} project in {directory}:\n")
    for path in written:
        sys.stdout.write(f"  {path}\n")
    sys.stdout.write(
        f"next: cd {directory} && python -m venv .venv && . .venv/bin/activate "
        "&& pip install -e '.[test]' && pytest\n"
    )
    return 0
