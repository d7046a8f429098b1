"""The documentation site builds with ``mkdocs build --strict`` (what ``make
docs`` runs), so CI builds it through ``make test``; and strict mode with
this repo's validation settings and hooks fails on a dead link."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_MODULES = (
    "prism",
    "prism.runtime",
    "prism.providers",
    "prism.stores",
    "prism.tools",
    "prism.security",
    "prism.coding",
    "prism.sandbox",
    "prism.inspect",
    "prism.evals",
    "prism.durable",
    "prism.subagents",
    "prism.workflows",
    "prism.web",
    "prism.testing",
)


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
        check=False,
    )


def test_the_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = mkdocs_build(ROOT / "mkdocs.yml", site)
    assert done.returncode == 0, done.stderr
    # The home page is the README, with its docs/ links made relative.
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "Set up and go" in home and 'href="getting-started/"' in home
    # Every docs page and every example has its page; search has its index.
    for page in (ROOT / "docs").glob("*.md"):
        assert (site / page.stem / "index.html").is_file(), page.name
    for example in (ROOT / "examples").glob("*.py"):
        assert (site / "examples" / example.stem / "index.html").is_file(), example.name
    assert (site / "search" / "search_index.json").is_file()
    # The API reference renders each subpackage's public names from docstrings.
    runtime = (site / "reference" / "runtime" / "index.html").read_text(encoding="utf-8")
    assert 'id="prism.runtime.create_agent"' in runtime
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    reference = next(item["API reference"] for item in nav if "API reference" in item)
    assert [next(iter(entry)) for entry in reference] == list(REFERENCE_MODULES)


def small_site(tmp_path: Path, page: str) -> Path:
    """A one-page site with the repo's theme, hooks and validation settings."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n", encoding="utf-8")
    (docs / "page.md").write_text(page, encoding="utf-8")
    config.update(
        docs_dir=str(docs),
        nav=[{"Home": "index.md"}, {"Page": "page.md"}],
        hooks=[str(ROOT / hook) for hook in config["hooks"]],
        plugins=["search"],
    )
    path = tmp_path / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_a_dead_link_fails_the_build(tmp_path: Path) -> None:
    page = (
        "# Page\n\nSee [x](nowhere.md), [ok](../examples/demo.py) and"
        " [gone](../examples/no_such_example.py).\n"
    )
    done = mkdocs_build(small_site(tmp_path, page), tmp_path / "s")
    assert done.returncode != 0
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 2, done.stderr
    assert "nowhere.md" in warnings[0] + warnings[1]
    assert "no_such_example.py" in warnings[0] + warnings[1]


def test_a_link_to_an_example_becomes_its_page(tmp_path: Path) -> None:
    site = tmp_path / "s"
    done = mkdocs_build(small_site(tmp_path, "# Page\n\n[demo](../examples/demo.py)\n"), site)
    assert done.returncode == 0, done.stderr
    assert 'href="../examples/demo/"' in (site / "page" / "index.html").read_text(encoding="utf-8")
