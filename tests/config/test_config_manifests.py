from __future__ import annotations

import copy
from typing import Any

import pytest

from prism.config import PackageManifest, is_semver, validate_package_manifest
from prism.errors import ManifestError

GOOD: dict[str, Any] = {
    "name": "@acme/prism-memory",
    "version": "1.2.3-beta.1+build.5",
    "description": "Observational memory",
    "license": "MIT",
    "keywords": ["memory"],
    "prismVersion": ">=0.1.0 <1.0.0",
    "contributions": {
        "compactionStrategy": ["om-compaction"],
        "tool": ["recall"],
        "command": ["om:status", "om:view"],
        "model": ["openai/gpt-4o-mini"],
    },
    "metadata": {"displayName": "Memory", "links": [{"href": "https://example.test"}]},
}


def test_valid_manifest_round_trips() -> None:
    data = copy.deepcopy(GOOD)
    manifest = validate_package_manifest(data)
    assert isinstance(manifest, PackageManifest)
    assert manifest.name == "@acme/prism-memory"
    assert manifest.contribution_names("command") == ("om:status", "om:view")
    assert manifest.contribution_names("skill") == ()
    assert manifest.prism_version == ">=0.1.0 <1.0.0"
    assert manifest.to_json() == GOOD
    assert data == GOOD  # input untouched
    assert PackageManifest.from_json({"name": "x", "version": "0.0.1"}).to_json() == {
        "name": "x",
        "version": "0.0.1",
    }


def problems(data: Any) -> tuple[str, ...]:
    with pytest.raises(ManifestError) as info:
        validate_package_manifest(data)
    return info.value.problems


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"name": None}, "name: must be a non-empty string, got null"),
        ({"name": "Bad Name"}, "name: is not a valid package name"),
        ({"version": "v1.0.0"}, "version: is not a semantic version"),
        ({"version": "1.0"}, "version: is not a semantic version"),
        ({"version": "01.0.0"}, "version: is not a semantic version"),
        ({"prismVersion": "latest"}, "prismVersion: is not a version requirement"),
        ({"homepage": 5}, "homepage: must be a non-empty string, got number"),
        ({"keywords": "memory"}, "keywords: must be an array of short non-empty strings"),
        ({"colour": "blue"}, "colour: unknown key"),
        ({"contributions": []}, "contributions: must be an object, got array"),
        ({"contributions": {"widget": ["a"]}}, "contributions.widget: unknown contribution kind"),
        (
            {"contributions": {"compaction_strategy": ["a"]}},
            "contributions.compaction_strategy: unknown contribution kind",
        ),
        (
            {"contributions": {"tool": "recall"}},
            "contributions.tool: must be an array of names, got string",
        ),
        (
            {"contributions": {"tool": ["ok", 3]}},
            "contributions.tool[1]: must be a name string, got number",
        ),
        (
            {"contributions": {"tool": ["rm -rf /"]}},
            "contributions.tool[0]: is not a valid contribution name",
        ),
        ({"contributions": {"tool": ["a", "a"]}}, "contributions.tool[1]: duplicate tool name 'a'"),
        ({"metadata": "x"}, "metadata: must be an object, got string"),
    ],
)
def test_refusals_name_the_key_path(patch: dict[str, Any], expected: str) -> None:
    data = {**copy.deepcopy(GOOD), **patch}
    assert any(p.startswith(expected) for p in problems(data)), problems(data)


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"scripts": {"postinstall": "curl x | sh"}}, "scripts: executable content is not allowed"),
        ({"main": "index.js"}, "main: executable content is not allowed"),
        ({"exec": "python -c 1"}, "exec: executable content is not allowed"),
        ({"command": "rm"}, "command: executable content is not allowed"),
        (
            {"metadata": {"hooks": {"onLoad": "x"}}},
            "metadata.hooks: executable content is not allowed",
        ),
        (
            {"metadata": {"a": [{"script": "x"}]}},
            "metadata.a[0].script: executable content is not allowed",
        ),
        (
            {"metadata": {"fn": print}},
            "metadata.fn: is a callable, not JSON data; executable content",
        ),
        (
            {"description": lambda: 1},
            "description: is a callable, not JSON data; executable content",
        ),
        ({"metadata": {"blob": b"\x00"}}, "metadata.blob: is a bytes, not JSON data"),
    ],
)
def test_executable_content_refused(patch: dict[str, Any], expected: str) -> None:
    data = {**copy.deepcopy(GOOD), **patch}
    assert any(p.startswith(expected) for p in problems(data)), problems(data)


def test_required_keys_and_every_problem_reported() -> None:
    found = problems({"scripts": {}, "colour": 1})
    assert found == (
        "scripts: executable content is not allowed in a manifest",
        "colour: unknown key",
        "name: is required",
        "version: is required",
    )


def test_message_summarises_first_problems() -> None:
    data = {f"k{i}": 1 for i in range(8)}
    with pytest.raises(ManifestError) as info:
        validate_package_manifest(data)
    message = str(info.value)
    assert message.startswith("invalid package manifest: k0: unknown key; k1: unknown key")
    assert message.endswith("(and 5 more)")


@pytest.mark.parametrize("data", [[], "x", None, 3])
def test_non_object_manifest(data: Any) -> None:
    with pytest.raises(ManifestError, match="manifest must be a JSON object"):
        validate_package_manifest(data)


def test_command_is_fine_as_a_contribution_kind() -> None:
    manifest = validate_package_manifest(
        {"name": "x", "version": "1.0.0", "contributions": {"command": ["hello"]}}
    )
    assert manifest.contributions == {"command": ("hello",)}


def test_semver() -> None:
    assert is_semver("0.0.0") and is_semver("10.20.30-rc.1+sha.abc")
    assert not is_semver("1.0.0-") and not is_semver("1.0.0-01") and not is_semver(1)
