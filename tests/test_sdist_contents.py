"""The sdist carries what a downstream packager needs to run the tests from
it: docs/, examples/, tests/ and benches/ (the tests import its fixtures),
plus what builds the site. Built with maturin as ``make dist`` does."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("docs", "examples", "tests", "benches", "tools", ".github")
SKIPPED_PARTS = {"__pycache__", ".hypothesis", ".benchmarks"}


def source_files() -> set[str]:
    files = set()
    for tree in TREES:
        for path in (ROOT / tree).rglob("*"):
            rel = path.relative_to(ROOT)
            if path.is_file() and not SKIPPED_PARTS & set(rel.parts):
                if path.suffix not in {".pyc", ".so"}:
                    files.add(rel.as_posix())
    return files


def test_the_sdist_ships_docs_examples_and_tests(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "maturin", "sdist", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (archive,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    wanted = source_files()
    assert {"docs/getting-started.md", "examples/demo.py", "tests/conftest.py"} <= wanted
    assert not wanted - names, f"missing from the sdist: {sorted(wanted - names)[:10]}"
    assert {"mkdocs.yml", "Makefile", "requirements-dev.lock", "pyproject.toml"} <= names
    assert not [n for n in names if n.endswith((".so", ".pyc"))]
