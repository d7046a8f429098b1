"""Data-only package manifests.

A manifest describes a package and names the contributions it will register
when a host loads its extension; it never makes anything run. Validation is
strict and reports every problem with its key path:

- the document is a JSON object of JSON data only;
- only the known top-level keys (``MANIFEST_KEYS``) may appear;
- ``name`` (required) is a package name: lowercase letters, digits, ``.``,
  ``_``, ``-``, optionally scoped ``@scope/name``, at most 214 characters;
- ``version`` (required) is semver ``MAJOR.MINOR.PATCH[-pre][+build]``
  (no leading ``v``); ``prismVersion`` is an optional requirement string of
  comparators such as ``">=0.1.0 <1.0.0"`` or ``"^0.1.0"``;
- ``contributions`` maps a contribution kind (``tool``, ``provider``,
  ``model``, ``compactionStrategy``, ``retryPolicy``, ``inputBuilder``,
  ``promptBuilder``, ``contextProvider``, ``skill``, ``command``) to a list of
  unique contribution names (letters, digits and ``. _ : / @ -``, at most 128
  characters, starting with a letter or digit);
- executable content is refused: any non-JSON value (a function, class,
  object, bytes) anywhere, and any key that names code to run —
  ``EXECUTABLE_KEYS`` (``script``, ``scripts``, ``exec``, ``command``,
  ``main``, ``module``, ``entry``, ``import``, ``require``, ``eval``,
  ``install`` hooks, ...) — at the top level or inside ``metadata``.
  ``command`` is a contribution *kind* inside ``contributions`` and is fine
  there, because contribution values are names, never code.
- ``metadata`` is an optional object of free-form data (display hints,
  links), checked for executable keys at every depth.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prism.config._json import copy_json, describe_type, key_path, non_json_path
from prism.errors import ManifestError
from prism.registries import CONTRIBUTION_KINDS

MANIFEST_KEYS: frozenset[str] = frozenset(
    {
        "name",
        "version",
        "description",
        "license",
        "homepage",
        "repository",
        "author",
        "keywords",
        "prismVersion",
        "contributions",
        "metadata",
    }
)
EXECUTABLE_KEYS: frozenset[str] = frozenset(
    {
        "script",
        "scripts",
        "exec",
        "execute",
        "command",
        "cmd",
        "shell",
        "run",
        "main",
        "module",
        "entry",
        "entrypoint",
        "entryPoint",
        "import",
        "imports",
        "require",
        "code",
        "eval",
        "bin",
        "install",
        "preinstall",
        "postinstall",
        "setup",
        "hooks",
    }
)

PACKAGE_NAME = re.compile(r"^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*$")
_IDENT = r"(0|[1-9]\d*)"
_PRE = r"(0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER = re.compile(
    rf"^{_IDENT}\.{_IDENT}\.{_IDENT}(-{_PRE}(\.{_PRE})*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$"
)
_COMPARATOR = re.compile(
    r"^(\^|~|>=|<=|>|<|=)?(0|[1-9]\d*)(\.(0|[1-9]\d*|x|\*)){0,2}(-[0-9A-Za-z.-]+)?$"
)
CONTRIBUTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$")
_MAX_TEXT = 2000
_MAX_PROBLEMS_IN_MESSAGE = 5


@dataclass(frozen=True, slots=True)
class PackageManifest:
    name: str
    version: str
    description: str = ""
    contributions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    license: str | None = None
    homepage: str | None = None
    repository: str | None = None
    author: str | None = None
    keywords: tuple[str, ...] = ()
    prism_version: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> PackageManifest:
        return validate_package_manifest(data)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.description:
            out["description"] = self.description
        for key, value in (
            ("license", self.license),
            ("homepage", self.homepage),
            ("repository", self.repository),
            ("author", self.author),
            ("prismVersion", self.prism_version),
        ):
            if value is not None:
                out[key] = value
        if self.keywords:
            out["keywords"] = list(self.keywords)
        if self.contributions:
            out["contributions"] = {k: list(v) for k, v in self.contributions.items()}
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out

    def contribution_names(self, kind: str) -> tuple[str, ...]:
        return self.contributions.get(kind, ())


def is_semver(value: object) -> bool:
    return isinstance(value, str) and SEMVER.match(value) is not None


def _is_version_requirement(value: str) -> bool:
    parts = value.replace(",", " ").split()
    return bool(parts) and all(_COMPARATOR.match(part) for part in parts)


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, path: str, reason: str) -> None:
        self.problems.append(f"{path}: {reason}")

    def text(self, data: Mapping[str, Any], key: str, *, required: bool = False) -> str | None:
        if key not in data:
            if required:
                self.add(key, "is required")
            return None
        value = data[key]
        if not isinstance(value, str) or (required and not value):
            self.add(key, f"must be a non-empty string, got {describe_type(value)}")
            return None
        if len(value) > _MAX_TEXT:
            self.add(key, f"is longer than {_MAX_TEXT} characters")
            return None
        return value

    def executable_keys(self, value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                child = key_path(path, key)
                if key in EXECUTABLE_KEYS:
                    self.add(child, "executable content is not allowed in a manifest")
                self.executable_keys(item, child)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.executable_keys(item, key_path(path, index))

    def contributions(self, value: Any) -> dict[str, tuple[str, ...]]:
        result: dict[str, tuple[str, ...]] = {}
        if not isinstance(value, dict):
            self.add("contributions", f"must be an object, got {describe_type(value)}")
            return result
        for kind, names in value.items():
            path = key_path("contributions", kind)
            if kind not in CONTRIBUTION_KINDS:
                self.add(
                    path,
                    f"unknown contribution kind; expected one of {', '.join(CONTRIBUTION_KINDS)}",
                )
                continue
            if not isinstance(names, list):
                self.add(path, f"must be an array of names, got {describe_type(names)}")
                continue
            seen: set[str] = set()
            accepted: list[str] = []
            for index, name in enumerate(names):
                item_path = key_path(path, index)
                if not isinstance(name, str):
                    self.add(item_path, f"must be a name string, got {describe_type(name)}")
                elif not CONTRIBUTION_NAME.match(name):
                    self.add(
                        item_path,
                        "is not a valid contribution name (letters, digits and . _ : / @ -, "
                        "starting with a letter or digit, at most 128 characters)",
                    )
                elif name in seen:
                    self.add(item_path, f"duplicate {kind} name {name!r}")
                else:
                    seen.add(name)
                    accepted.append(name)
            result[kind] = tuple(accepted)
        return result


def validate_package_manifest(data: Any) -> PackageManifest:
    """Validate a manifest document; raise ``ManifestError`` listing every
    problem (``problems`` holds them all) or return a ``PackageManifest``."""
    if not isinstance(data, dict):
        raise ManifestError(f"manifest must be a JSON object, got {describe_type(data)}")
    check = _Checker()
    non_json = non_json_path(data, "")
    if non_json is not None:
        where, reason = non_json
        check.add(where, f"{reason}; executable content is not allowed in a manifest")
    for key in data:
        if not isinstance(key, str):
            continue
        if key in EXECUTABLE_KEYS:
            check.add(key_path("", key), "executable content is not allowed in a manifest")
        elif key not in MANIFEST_KEYS:
            check.add(key_path("", key), "unknown key")

    name = check.text(data, "name", required=True)
    if name is not None and (len(name) > 214 or not PACKAGE_NAME.match(name)):
        check.add(
            "name", "is not a valid package name (lowercase, digits, . _ -, optional @scope/)"
        )
    version = check.text(data, "version", required=True)
    if version is not None and not is_semver(version):
        check.add("version", "is not a semantic version like 1.2.3 or 1.2.3-beta.1")
    description = check.text(data, "description") or ""
    optional_text = {
        key: check.text(data, key) for key in ("license", "homepage", "repository", "author")
    }
    prism_version = check.text(data, "prismVersion")
    if prism_version is not None and not _is_version_requirement(prism_version):
        check.add("prismVersion", "is not a version requirement like '>=0.1.0 <1.0.0' or '^0.1.0'")

    keywords: tuple[str, ...] = ()
    if "keywords" in data:
        raw = data["keywords"]
        if not isinstance(raw, list) or not all(
            isinstance(k, str) and 0 < len(k) <= 100 for k in raw
        ):
            check.add("keywords", "must be an array of short non-empty strings")
        else:
            keywords = tuple(raw)

    contributions: dict[str, tuple[str, ...]] = {}
    if "contributions" in data:
        contributions = check.contributions(data["contributions"])

    metadata: dict[str, Any] = {}
    if "metadata" in data:
        raw_metadata = data["metadata"]
        if not isinstance(raw_metadata, dict):
            check.add("metadata", f"must be an object, got {describe_type(raw_metadata)}")
        else:
            check.executable_keys(raw_metadata, "metadata")
            metadata = raw_metadata

    if check.problems:
        shown = "; ".join(check.problems[:_MAX_PROBLEMS_IN_MESSAGE])
        more = len(check.problems) - _MAX_PROBLEMS_IN_MESSAGE
        suffix = f" (and {more} more)" if more > 0 else ""
        raise ManifestError(
            f"invalid package manifest: {shown}{suffix}", problems=tuple(check.problems)
        )

    assert name is not None and version is not None
    return PackageManifest(
        name=name,
        version=version,
        description=description,
        contributions=contributions,
        license=optional_text["license"],
        homepage=optional_text["homepage"],
        repository=optional_text["repository"],
        author=optional_text["author"],
        keywords=keywords,
        prism_version=prism_version,
        metadata=copy_json(metadata),
    )
