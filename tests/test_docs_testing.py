"""docs/testing.md must work as written: its files are written to a fresh
directory and run with pytest in a subprocess, as a host's test suite would."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "testing.md"


def doc_files(path: Path) -> dict[str, str]:
    """Python blocks whose first line is ``# file: NAME``, by name."""
    files: dict[str, str] = {}
    for block in re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S):
        first, _, _body = block.partition("\n")
        match = re.fullmatch(r"# file: (\S+)", first.strip())
        assert match, f"every python block in {path.name} names its file: {first!r}"
        files[match.group(1)] = block
    return files


def test_testing_md_runs_as_a_test_suite(tmp_path: Path) -> None:
    files = doc_files(DOC)
    assert {"weather_app.py", "conftest.py", "test_scripted.py", "test_function_model.py"} <= set(
        files
    )
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout, done.stdout
