"""Resource loading through a caller-provided loader only.

Prism never fetches anything itself: the host passes a ``ResourceLoader``
whose ``load(uri)`` (sync or async) returns ``{"uri": ..., "text": str}`` or
``{"uri": ..., "data": bytes}``. These helpers add the guards: the
``"resource"`` permission is checked before the loader is called, results
are size-limited and strictly decoded, and every error is a
``ResourceError`` (or ``PermissionDeniedError``) whose message names the
resource (without credentials or query string) and the reason, never its
contents.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from prism.config.manifests import PackageManifest, validate_package_manifest
from prism.errors import ManifestError, ResourceError
from prism.extensions._redaction import describe_error
from prism.security.permissions import PermissionPolicy, PermissionRequest, require_permission
from prism.security.redaction import (
    SecretRedactor,
    require_redactor,
)
from prism.security.resource_names import ResourceNameError, normalize_resource_uri

DEFAULT_MAX_RESOURCE_BYTES = 1024 * 1024
MAX_SHOWN_URI_CHARS = 200


@runtime_checkable
class ResourceLoader(Protocol):
    def load(self, uri: str) -> Mapping[str, Any] | Awaitable[Mapping[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class TextResource:
    uri: str
    text: str


@dataclass(frozen=True, slots=True)
class JsonResource:
    uri: str
    value: Any


@dataclass(frozen=True, slots=True)
class ManifestResource:
    uri: str
    manifest: PackageManifest


def display_uri(uri: str, redactor: SecretRedactor) -> str:
    """``uri`` without user info, query or fragment, for error messages:
    redacted, then clipped to ``MAX_SHOWN_URI_CHARS`` (never clipped first,
    which could leave a secret's prefix)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "<unparseable uri>"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    shown = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    shown = redactor.redact_text(shown)
    if len(shown) <= MAX_SHOWN_URI_CHARS:
        return shown
    return shown[: MAX_SHOWN_URI_CHARS - 3] + "..."


def _check_uri(uri: object) -> str:
    if not isinstance(uri, str) or not uri.strip():
        raise ResourceError("resource uri must be a non-empty string")
    if not uri.isprintable():
        raise ResourceError("resource uri must not contain control characters")
    return uri


async def _fetch(
    loader: ResourceLoader,
    uri: str,
    *,
    max_bytes: int,
    permission_policy: PermissionPolicy | None,
    redactor: SecretRedactor,
) -> str:
    _check_uri(uri)
    redactor = require_redactor(redactor, owner="resource loader")
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 0:
        raise ResourceError("max_bytes must be a non-negative integer")
    shown = display_uri(uri, redactor)
    try:
        # Every policy, not only the allowlist, sees the canonical name: a
        # prefix check on the raw string is not a path boundary.
        canonical = normalize_resource_uri(uri)
    except ResourceNameError as error:
        raise ResourceError(f"resource {shown}: refused: {error}") from None
    await require_permission(permission_policy, PermissionRequest(kind="resource", name=canonical))
    load = getattr(loader, "load", None)
    if not callable(load):
        raise ResourceError("resource loader must have a callable load(uri)")
    try:
        result = load(uri)
        if inspect.isawaitable(result):
            result = await result
    except Exception as error:
        reason = describe_error(error, redactor)
        raise ResourceError(f"resource {shown}: loader failed ({reason})") from error
    if not isinstance(result, Mapping):
        raise ResourceError(
            f"resource {shown}: loader returned {type(result).__name__}, not a mapping"
        )
    returned_uri = result.get("uri", uri)
    if returned_uri != uri:
        raise ResourceError(f"resource {shown}: loader answered for a different uri")
    has_text, has_data = "text" in result, "data" in result
    if has_text == has_data:
        raise ResourceError(
            f"resource {shown}: loader result needs exactly one of 'text' or 'data'"
        )
    if has_text:
        text = result["text"]
        if not isinstance(text, str):
            raise ResourceError(f"resource {shown}: 'text' must be a string")
        # Characters never outnumber UTF-8 bytes, so only borderline texts are encoded.
        if len(text) > max_bytes or (
            len(text) * 4 > max_bytes and len(text.encode("utf-8", "surrogatepass")) > max_bytes
        ):
            raise ResourceError(f"resource {shown}: larger than {max_bytes} bytes")
        return text
    data = result["data"]
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ResourceError(f"resource {shown}: 'data' must be bytes")
    raw = bytes(data)
    if len(raw) > max_bytes:
        raise ResourceError(f"resource {shown}: larger than {max_bytes} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ResourceError(f"resource {shown}: not valid UTF-8 (byte {error.start})") from None


async def load_text_resource(
    loader: ResourceLoader,
    uri: str,
    *,
    max_bytes: int = DEFAULT_MAX_RESOURCE_BYTES,
    permission_policy: PermissionPolicy | None = None,
    redactor: SecretRedactor,
) -> TextResource:
    """Load ``uri`` as UTF-8 text of at most ``max_bytes`` bytes. ``redactor``
    (the host's, built once) masks secrets in a loader's error message."""
    text = await _fetch(
        loader, uri, max_bytes=max_bytes, permission_policy=permission_policy, redactor=redactor
    )
    return TextResource(uri=uri, text=text)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_json(uri: str, text: str, redactor: SecretRedactor) -> Any:
    shown = display_uri(uri, redactor)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise ResourceError(
            f"resource {shown}: invalid JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    except (ValueError, RecursionError) as error:
        reason = str(error) if isinstance(error, ValueError) else "nested too deeply"
        raise ResourceError(f"resource {shown}: invalid JSON ({reason})") from None


async def load_json_resource(
    loader: ResourceLoader,
    uri: str,
    *,
    max_bytes: int = DEFAULT_MAX_RESOURCE_BYTES,
    permission_policy: PermissionPolicy | None = None,
    redactor: SecretRedactor,
) -> JsonResource:
    text = await _fetch(
        loader, uri, max_bytes=max_bytes, permission_policy=permission_policy, redactor=redactor
    )
    return JsonResource(uri=uri, value=_parse_json(uri, text, redactor))


async def load_manifest_resource(
    loader: ResourceLoader,
    uri: str,
    *,
    max_bytes: int = DEFAULT_MAX_RESOURCE_BYTES,
    permission_policy: PermissionPolicy | None = None,
    redactor: SecretRedactor,
) -> ManifestResource:
    """Load and validate a package manifest; manifest problems raise
    ``ManifestError`` prefixed with the resource."""
    text = await _fetch(
        loader, uri, max_bytes=max_bytes, permission_policy=permission_policy, redactor=redactor
    )
    value = _parse_json(uri, text, redactor)
    try:
        manifest = validate_package_manifest(value)
    except ManifestError as error:
        raise ManifestError(
            f"resource {display_uri(uri, redactor)}: {error}", problems=error.problems
        ) from None
    return ManifestResource(uri=uri, manifest=manifest)


class DictResourceLoader:
    """A loader over an in-memory ``{uri: text | bytes}`` table, for tests
    and hosts that embed their resources."""

    def __init__(self, resources: Mapping[str, str | bytes]) -> None:
        self._resources = dict(resources)

    def load(self, uri: str) -> Mapping[str, Any]:
        if uri not in self._resources:
            raise ResourceError("no such resource")
        value = self._resources[uri]
        return (
            {"uri": uri, "text": value} if isinstance(value, str) else {"uri": uri, "data": value}
        )
