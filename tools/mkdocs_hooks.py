"""MkDocs hooks for the documentation site (mkdocs.yml names this file).

The home page is the README and each ``examples/*.py`` a page of its own, both
generated at build time so neither is copied into docs/ and drifts. Links from
docs pages to ``../examples/NAME.py`` are rewritten to that example's page; a
link to an example that does not exist is left alone, so strict mode fails
on it like on any other dead link.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
EXAMPLE_LINK = re.compile(r"\]\(\.\./examples/([A-Za-z0-9_]+)\.py\)")
README_DOCS_LINK = re.compile(r"\]\(docs/")


def readme_as_home_page() -> str:
    """The README with its ``docs/...`` links made relative to docs/."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return README_DOCS_LINK.sub("](", text)


def example_page(path: Path) -> str:
    source = path.read_text(encoding="utf-8")
    return (
        f"# `examples/{path.name}`\n\n"
        "Run it from a checkout with `python examples/"
        f"{path.name}`; the example tests execute it.\n\n"
        f"```python\n{source}```\n"
    )


def on_files(files: Files, config: Any) -> Files:
    if files.get_file_from_path("index.md") is None:
        files.append(File.generated(config, "index.md", content=readme_as_home_page()))
    for path in sorted(EXAMPLES.glob("*.py")):
        files.append(File.generated(config, f"examples/{path.stem}.md", content=example_page(path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    def to_example_page(match: re.Match[str]) -> str:
        name = match.group(1)
        if not (EXAMPLES / f"{name}.py").is_file():
            return match.group(0)
        depth = page.file.src_uri.count("/")
        return f"]({'../' * depth}examples/{name}.md)"

    return EXAMPLE_LINK.sub(to_example_page, markdown)
