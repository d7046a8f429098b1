"""search and list through the native core on real trees: .gitignore,
globs, context, caps, sorting, bad and catastrophic patterns, escapes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from coding_helpers import Call, error_of, make_call

from prism.coding import CodingLimits, create_coding_tools
from prism.security import NOOP_REDACTOR

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(workspace: Path, tmp_path: Path) -> Path:
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "gen.py").write_text("TODO generated\n")
    (workspace / "debug.log").write_text("TODO in a log\n")
    (workspace / "src" / "b.py").write_text("x = 1\n# TODO second\ny = 2\n")
    (workspace / "src" / "a.py").write_text("# TODO first\n")
    (workspace / "README.md").write_text("todo lower case\n")
    (workspace / ".hidden").write_text("TODO hidden\n")
    (workspace / "blob.bin").write_bytes(b"TODO\x00\x01")
    secret_dir = tmp_path / "elsewhere"
    secret_dir.mkdir()
    (secret_dir / "leak.py").write_text("TODO outside\n")
    (workspace / "linked").symlink_to(secret_dir)
    return workspace


async def test_search_sorted_and_gitignore_aware(tree: Path, call: Call) -> None:
    text = (await call("search", pattern="TODO"))["value"]
    assert text.splitlines() == [
        "src/a.py",
        "  1:# TODO first",
        "src/b.py",
        "  2:# TODO second",
        text.splitlines()[-1],
    ]
    assert text.splitlines()[-1].startswith("[2 matching lines in 2 files")


async def test_search_options(tree: Path, call: Call) -> None:
    insensitive = (await call("search", pattern="todo", ignore_case=True, glob=["*.md"]))["value"]
    assert insensitive.startswith("README.md\n  1:todo lower case")
    literal = (await call("search", pattern="x = 1", literal=True, context=1))["value"]
    assert "  1:x = 1\n  2-# TODO second" in literal
    hidden = (await call("search", pattern="TODO", hidden=True))["value"]
    assert ".hidden" in hidden
    scoped = (await call("search", pattern="TODO", path="src", glob=["!a.py"]))["value"]
    assert scoped.startswith("src/b.py")
    assert (await call("search", pattern="nothing-matches-this"))["value"] == "[no matches]"


async def test_search_caps(tree: Path) -> None:
    (tree / "many.txt").write_text("hit\n" * 100)
    limits = CodingLimits(search_max_per_file=5, search_max_total=7)
    call = make_call(create_coding_tools(tree, limits=limits, redactor=NOOP_REDACTOR))
    (tree / "more.txt").write_text("hit\n" * 3)
    text = (await call("search", pattern="hit"))["value"]
    assert text.count(":hit") == 7
    assert "output capped" in text


async def test_bad_and_catastrophic_patterns(tree: Path, call: Call) -> None:
    assert "invalid search pattern" in error_of(await call("search", pattern="(unclosed"))
    assert "invalid search pattern" in error_of(await call("search", pattern="(a{1000}){1000}"))
    assert "invalid glob" in error_of(await call("search", pattern="x", glob=["["]))
    # a pattern that backtracks exponentially elsewhere is linear here
    (tree / "aaa.txt").write_text("a" * 50_000 + "\n")
    result = await call("search", pattern="(a*)*b")
    assert result["value"] == "[no matches]"


async def test_search_and_list_stay_inside_roots(tree: Path, call: Call, tmp_path: Path) -> None:
    refused = await call("search", pattern="TODO", path=str(tmp_path / "elsewhere"))
    assert refused["value"]["code"] == "policy_denied"
    assert (await call("list", path="../"))["value"]["code"] == "policy_denied"
    text = (await call("search", pattern="outside"))["value"]
    assert text == "[no matches]"  # the symlinked directory is not followed
    assert "is not a directory" in error_of(await call("list", path="src/a.py"))


async def test_list_newest_first(tree: Path, call: Call) -> None:
    os.utime(tree / "src" / "a.py", (1_000_000, 1_000_000))
    os.utime(tree / "src" / "b.py", (2_000_000, 2_000_000))
    listed = (await call("list", glob=["*.py"]))["value"].splitlines()
    assert listed == ["src/app.py", "src/b.py", "src/a.py"]
    everything = (await call("list"))["value"].splitlines()
    assert "build/gen.py" not in everything and "debug.log" not in everything
    assert (await call("list", path="src", glob=["*.rs"]))["value"] == "[no files]"
