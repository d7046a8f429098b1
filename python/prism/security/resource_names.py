"""The canonical form of a resource URI, which is what allowlists match.

A raw string prefix is not a path boundary: ``file:///srv/data/*`` must not
allow ``file:///srv/data/../../etc/passwd``, its ``%2e%2e`` spelling, or
``pkg://word-tools/../other/secret``. So both the requested URI and every
allowlist pattern are brought to one form first:

1. scheme and authority are lower-cased; user info is dropped (credentials
   are not part of *what* is loaded);
2. the path is percent-decoded until it stops changing (so ``%252e`` cannot
   survive one decode as ``%2e`` and become ``..`` in the loader), and ``\\``
   counts as ``/`` (Windows loaders treat it so);
3. empty segments (``//``) and ``.`` are dropped and ``..`` removes the
   previous segment; a ``..`` with nothing left to remove climbs out of the
   root and the URI is refused;
4. query and fragment are kept as written (matched literally).

A NUL or other control character anywhere is refused as well.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["ResourceNameError", "normalize_resource_uri"]

# A name that still changes after this many decodes is an attack, not a URI.
_MAX_DECODES = 4


class ResourceNameError(ValueError):
    """A resource URI that cannot be normalised or climbs out of its root.
    The message names the reason, never the URI (it may hold credentials)."""


def _decode(path: str) -> str:
    for _ in range(_MAX_DECODES):
        decoded = unquote(path, errors="strict")
        if decoded == path:
            return path
        path = decoded
    raise ResourceNameError("resource path is still percent-encoded after repeated decoding")


def _resolve(path: str) -> str:
    absolute = path.startswith("/")
    trailing = path.endswith("/") or path.endswith("/.") or path.endswith("/..")
    out: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not out:
                raise ResourceNameError("resource path climbs above its root ('..')")
            out.pop()
            continue
        out.append(segment)
    resolved = ("/" if absolute else "") + "/".join(out)
    if trailing and out:
        resolved += "/"
    return resolved


def normalize_resource_uri(uri: str) -> str:
    """``uri`` in canonical form (see the module docstring), or
    ``ResourceNameError`` when it climbs out of its root or cannot be read."""
    if not isinstance(uri, str) or not uri:
        raise ResourceNameError("resource uri must be a non-empty string")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in uri):
        raise ResourceNameError("resource uri must not contain control characters")
    try:
        parts = urlsplit(uri)
    except ValueError:
        raise ResourceNameError("resource uri cannot be parsed") from None
    try:
        path = _decode(parts.path)
    except UnicodeDecodeError:
        raise ResourceNameError("resource path is not valid UTF-8 once decoded") from None
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path):
        raise ResourceNameError("resource path decodes to a control character")
    path = _resolve(path.replace("\\", "/"))
    netloc = parts.netloc.rpartition("@")[2].lower()
    return urlunsplit((parts.scheme.lower(), netloc, path, parts.query, parts.fragment))
