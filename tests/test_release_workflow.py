"""The release and docs workflows (.github/workflows) cannot run here, so they
are checked statically: actionlint (from PyPI, a dev dependency) finds no
problem in them, and they build and publish what the README promises."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"


def actionlint() -> str:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which(
        "actionlint"
    )
    assert found, "actionlint is missing: install the dev dependencies (make install)"
    return found


def lint(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [actionlint(), "-no-color", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )


def workflow() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    return loaded


def test_actionlint_passes_every_workflow() -> None:
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert RELEASE in files
    done = lint(*files)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / ".github" / "workflows" / "release.yml"
    broken.parent.mkdir(parents=True)
    text = RELEASE.read_text(encoding="utf-8").replace(
        "runs-on: windows-latest", "runs-on: windoze"
    )
    broken.write_text(text.replace("needs: [linux,", "needs: [linnux,"), encoding="utf-8")
    done = lint(broken)
    assert done.returncode != 0
    assert "windoze" in done.stdout and "linnux" in done.stdout


def test_the_release_covers_every_platform_and_publishes_trusted() -> None:
    jobs = workflow()["jobs"]
    linux = jobs["linux"]["strategy"]["matrix"]
    assert set(linux["target"]) == {"x86_64", "aarch64"}
    assert set(linux["libc"]) == {"manylinux2014", "musllinux_1_2"}
    assert {entry["target"] for entry in jobs["macos"]["strategy"]["matrix"]["include"]} == {
        "x86_64",
        "aarch64",
    }
    assert jobs["windows"]["runs-on"].startswith("windows")
    sdist_steps = [step.get("with", {}) for step in jobs["sdist"]["steps"]]
    assert any(step.get("command") == "sdist" for step in sdist_steps)
    publish = jobs["publish"]
    assert set(publish["needs"]) == {"linux", "macos", "windows", "sdist"}
    assert publish["permissions"]["id-token"] == "write"
    uses = [step.get("uses", "") for step in publish["steps"]]
    assert any(u.startswith("pypa/gh-action-pypi-publish@") for u in uses)
    # Wheels use the fat-LTO `dist` profile of `make dist`; cargo refuses
    # --release next to --profile.
    for name in ("linux", "macos", "windows"):
        build = next(s for s in jobs[name]["steps"] if s.get("name") == "Build the wheel")
        assert "--profile dist" in build["with"]["args"]
        assert "--release" not in build["with"]["args"]
    # Trusted publishing: no API token anywhere in the workflow.
    assert "password" not in RELEASE.read_text(encoding="utf-8")


def test_the_docs_workflow_publishes_what_make_docs_builds() -> None:
    docs: dict[str, Any] = yaml.safe_load((WORKFLOWS / "docs.yml").read_text(encoding="utf-8"))
    steps = docs["jobs"]["build"]["steps"]
    assert any(step.get("run") == "make docs" for step in steps)
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "site"
    assert docs["jobs"]["deploy"]["needs"] == "build"
