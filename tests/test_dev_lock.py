"""The committed dev lock covers pyproject.toml: every runtime dependency and
every entry of the ``dev`` extra is pinned in requirements-dev.lock, with
hashes, at a version the requirement allows. ``make test`` installs from the
lock only, so a dependency added to pyproject.toml without ``make lock``
would otherwise be missing from a fresh clone's test run."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements-dev.lock"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def locked_pins(text: str) -> dict[str, list[str]]:
    """name -> pinned versions (a universal lock may pin one name per platform)."""
    pins: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _PIN.match(line)
        if match:
            pins.setdefault(canonicalize_name(match[1]), []).append(match[2])
    return pins


def unmet(requirements: list[str], pins: dict[str, list[str]]) -> list[str]:
    problems = []
    for text in requirements:
        requirement = Requirement(text)
        versions = pins.get(canonicalize_name(requirement.name))
        if not versions:
            problems.append(f"{requirement.name} is not in the lock")
        elif not any(requirement.specifier.contains(v, prereleases=True) for v in versions):
            problems.append(f"{requirement.name} {versions} does not satisfy {text!r}")
    return problems


def test_the_lock_pins_every_runtime_and_dev_dependency() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    text = LOCK.read_text()
    problems = unmet(wanted, locked_pins(text))
    assert not problems, "run `make lock`: " + "; ".join(problems)
    # Every pin carries its hashes, so `pip install --require-hashes` accepts it.
    assert text.count("==") <= text.count("--hash=sha256:")


def test_a_missing_or_stale_pin_is_named() -> None:
    pins = locked_pins(
        "anyio==4.16.0 \\\n    --hash=sha256:00\nzipp==1.0 ; python_version < '3.12'\n"
    )
    assert pins == {"anyio": ["4.16.0"], "zipp": ["1.0"]}
    assert unmet(["anyio>=4.5", "zipp>=1"], pins) == []
    assert unmet(["anyio>=5", "left-out>=1"], pins) == [
        "anyio ['4.16.0'] does not satisfy 'anyio>=5'",
        "left-out is not in the lock",
    ]
