"""The error tree drawn at the top of prism/errors.py is the tree the code
defines: every ``PrismError`` subclass anywhere in python/prism appears in
the drawing under its real parent, with its builtin extra bases, and every
wire code stays what it was."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import prism.errors as errors
from prism.errors import (
    AccessError,
    ConfigError,
    ExtensionError,
    PrismError,
    RunError,
    SessionStateError,
    StoreError,
)

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "prism"
_NODE = re.compile(r"[├└]── (\w+)(?: \(([\w, ]+)\))?")

# The ``code`` each class puts in ErrorInfo on the wire: never changes.
WIRE_CODES = {
    "PrismError": "prism_error",
    "ConfigError": "invalid_config",
    "ManifestError": "invalid_manifest",
    "ConfigFileError": "config_file_error",
    "SettingsError": "settings_error",
    "AttentionConfigError": "invalid_config",
    "RunAbortedError": "aborted",
    "ProviderError": "provider_error",
    "MaxToolRoundsError": "max_tool_rounds",
    "StructuredOutputError": "invalid_output",
    "AttentionBudgetError": "attention_budget_exceeded",
    "ReplayDivergedError": "replay_diverged",
    "SessionBusyError": "session_busy",
    "NoActiveRunError": "no_active_run",
    "StoreError": "store_error",
    "DuplicateEntryError": "duplicate_entry",
    "ExtensionError": "extension_error",
    "CommandError": "command_error",
    "RegistryClosedError": "registry_closed",
    "DuplicateContributionError": "duplicate_contribution",
    "PermissionDeniedError": "permission_denied",
    "CredentialError": "credential_error",
    "UnknownNameError": "unknown_name",
    "ResourceError": "resource_error",
    "NestingTooDeepError": "too_deep",
}


def drawn_tree(doc: str) -> dict[str, set[str]]:
    """class -> its direct bases, read off the drawing (parent + extras)."""
    lines = doc[doc.index("    PrismError\n") :].splitlines()
    bases: dict[str, set[str]] = {"PrismError": {"Exception"}}
    parents: list[str] = ["PrismError"]
    for line in lines[1:]:
        match = _NODE.search(line)
        if match is None:
            if line.strip() and "│" not in line:
                break  # the drawing ends at the first line that is not part of it
            continue
        depth = match.start() // 5
        name, extras = match[1], match[2]
        del parents[depth:]
        bases[name] = {parents[-1], *(e.strip() for e in (extras or "").split(",") if e)}
        parents.append(name)
    return bases


def defined_tree() -> dict[str, set[str]]:
    """class -> direct base names, for every class in python/prism that
    descends (by name) from PrismError."""
    classes: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = {ast.unparse(base).split(".")[-1] for base in node.bases}

    def descends(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name == "PrismError":
            return True
        return name not in seen and any(
            descends(base, seen | {name}) for base in classes.get(name, ())
        )

    return {name: bases for name, bases in classes.items() if descends(name)}


def test_the_drawing_is_the_tree_the_code_defines() -> None:
    assert errors.__doc__ is not None
    drawn = drawn_tree(errors.__doc__)
    defined = defined_tree()
    assert len(defined) > 25 and "LlmCompactionError" in defined  # the scan sees the package
    assert drawn == defined


def test_a_misdrawn_tree_is_caught() -> None:
    doc = "    PrismError\n     ├── A (ValueError)\n     │    └── B\n     └── C\n\nafter\n"
    assert drawn_tree(doc) == {
        "PrismError": {"Exception"},
        "A": {"PrismError", "ValueError"},
        "B": {"A"},
        "C": {"PrismError"},
    }


@pytest.mark.parametrize(("name", "code"), sorted(WIRE_CODES.items()))
def test_wire_codes_are_unchanged(name: str, code: str) -> None:
    assert getattr(errors, name).code == code


@pytest.mark.parametrize(
    ("group", "members"),
    [
        (
            RunError,
            [
                "RunAbortedError",
                "ProviderError",
                "MaxToolRoundsError",
                "StructuredOutputError",
                "AttentionBudgetError",
                "ReplayDivergedError",
            ],
        ),
        (SessionStateError, ["SessionBusyError", "NoActiveRunError"]),
        (StoreError, ["DuplicateEntryError"]),
        (
            ConfigError,
            ["ManifestError", "ConfigFileError", "SettingsError", "AttentionConfigError"],
        ),
        (ExtensionError, ["CommandError", "RegistryClosedError", "DuplicateContributionError"]),
        (AccessError, ["PermissionDeniedError", "CredentialError"]),
    ],
)
def test_a_host_catches_a_group_with_one_class(group: type[PrismError], members: list[str]) -> None:
    for name in members:
        with pytest.raises(group):
            cls = getattr(errors, name)
            raise cls.__new__(cls)


def test_builtin_bases_still_catch() -> None:
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.AttentionConfigError, TypeError)
    assert issubclass(errors.UnknownNameError, KeyError)
    assert issubclass(errors.DuplicateEntryError, ValueError)
    assert issubclass(errors.DuplicateContributionError, ValueError)
    assert issubclass(errors.NestingTooDeepError, ValueError)


def test_the_docs_draw_the_same_tree_as_the_code() -> None:
    # Two drawings kept by hand drifted apart (docs/errors.md lacked the
    # sandbox, inspector and workspace errors); the docs now copy the code's.
    doc = errors.__doc__ or ""
    start = doc.index("    PrismError\n")
    end = doc.index("\ntests/test_error_tree.py pins", start)
    in_code = [line[4:] for line in doc[start:end].rstrip("\n").splitlines()]
    page = (PACKAGE.parents[1] / "docs" / "errors.md").read_text(encoding="utf-8")
    block = page[page.index("```\nPrismError\n") + 4 :]
    in_docs = block[: block.index("```\n")].rstrip("\n").splitlines()
    assert in_docs == in_code, "docs/errors.md: copy the drawing from python/prism/errors.py"
