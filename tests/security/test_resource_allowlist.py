"""Resource allowlists match canonical URIs, not raw string prefixes (issue 11.2)."""

from __future__ import annotations

import posixpath
from urllib.parse import quote, unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prism.errors import ConfigError, PermissionDeniedError, ResourceError
from prism.resources import DictResourceLoader, load_text_resource
from prism.security import NOOP_REDACTOR, PermissionRequest, create_allowlist_policy
from prism.security.resource_names import ResourceNameError, normalize_resource_uri

POLICY = create_allowlist_policy(resources=["file:///srv/data/*", "pkg://word-tools/*"])


def allowed(uri: str) -> bool:
    return POLICY.check(PermissionRequest(kind="resource", name=uri)).allowed


@pytest.mark.parametrize(
    "uri",
    [
        "file:///srv/data/../../etc/passwd",
        "file:///srv/data/%2e%2e/%2e%2e/etc/passwd",
        "file:///srv/data/%2E%2E/secret",
        "file:///srv/data/%252e%252e/%252e%252e/etc/passwd",
        "file:///srv/data/..%2f..%2fetc/passwd",
        "file:///srv/data/..\\..\\etc\\passwd",
        "file:///srv/data/sub/../../x",
        "file:///srv//data/../../../etc",
        "pkg://word-tools/../other/secret",
        "pkg://word-tools/%2e%2e/other/secret",
        "pkg://word-tools/a/../../other",
        "file:///srv/data/x%00y",
        "file:///srv/database/x",
    ],
)
def test_escapes_are_denied(uri: str) -> None:
    assert not allowed(uri)


@pytest.mark.parametrize(
    "uri",
    [
        "file:///srv/data/x.txt",
        "file:///srv//data//x.txt",
        "file:///srv/data/./sub/../x.txt",
        "file:///srv/data/a%20b.txt",
        "FILE:///srv/data/x",
        "pkg://Word-Tools/README.md",
        "pkg://word-tools/a/../b",
    ],
)
def test_inside_the_root_is_allowed(uri: str) -> None:
    assert allowed(uri)


def test_climbing_above_the_root_is_refused_with_a_reason() -> None:
    decision = POLICY.check(PermissionRequest(kind="resource", name="pkg://word-tools/../x"))
    assert not decision.allowed and "climbs above its root" in decision.reason


def test_patterns_are_normalised_and_checked() -> None:
    policy = create_allowlist_policy(resources=["file:///srv//data/./*"])
    assert policy.check(PermissionRequest(kind="resource", name="file:///srv/data/x")).allowed
    with pytest.raises(ConfigError, match="climbs above its root"):
        create_allowlist_policy(resources=["pkg://a/../../b/*"])
    every = create_allowlist_policy(resources=["*"])
    assert every.check(PermissionRequest(kind="resource", name="mem://x")).allowed


def test_other_kinds_stay_exact_names() -> None:
    policy = create_allowlist_policy(tools=["read/../write"])
    assert policy.check(PermissionRequest(kind="tool", name="read/../write")).allowed
    assert not policy.check(PermissionRequest(kind="tool", name="write")).allowed


@pytest.mark.anyio
async def test_loader_is_never_called_for_an_escape() -> None:
    loader = DictResourceLoader({"file:///etc/passwd": "root"})
    with pytest.raises(PermissionDeniedError):
        await load_text_resource(
            loader,
            "file:///srv/data/%2e%2e/%2e%2e/etc/passwd",
            permission_policy=POLICY,
            redactor=NOOP_REDACTOR,
        )
    with pytest.raises(ResourceError, match="climbs above its root"):
        await load_text_resource(
            loader, "pkg://word-tools/../../x", permission_policy=POLICY, redactor=NOOP_REDACTOR
        )


@pytest.mark.anyio
async def test_policies_see_the_canonical_name() -> None:
    seen: list[str] = []

    class Recording:
        def check(self, request: PermissionRequest) -> bool:
            seen.append(request.name)
            return True

    loader = DictResourceLoader({"mem://a/./b//c": "ok"})
    await load_text_resource(
        loader, "mem://a/./b//c", permission_policy=Recording(), redactor=NOOP_REDACTOR
    )  # type: ignore[arg-type]
    assert seen == ["mem://a/b/c"]


# --- properties: the class, not only the examples ---------------------------------

_segment = st.sampled_from(["a", "b", "data", ".", "..", "", "%2e%2e", "%2E", "%252e%252e", "x y"])


@given(st.lists(_segment, max_size=12), st.lists(st.booleans(), max_size=12))
def test_allowed_means_inside_after_decoding_and_resolving(
    segments: list[str], encode: list[bool]
) -> None:
    """Whatever the spelling, an allowed URI resolves (as a loader that
    decodes and follows '..' would) to a path under /srv/data/."""
    parts = [
        quote(s, safe="") if i < len(encode) and encode[i] else s for i, s in enumerate(segments)
    ]
    uri = "file:///srv/data/" + "/".join(parts)
    # A careful loader: decode fully, then resolve.
    path = "/srv/data/" + "/".join(segments)
    for _ in range(4):
        path = unquote(path)
    resolved = posixpath.normpath(path.replace("//", "/"))
    if allowed(uri):
        assert resolved == "/srv/data" or resolved.startswith("/srv/data/"), (uri, resolved)


@given(st.text(max_size=40))
def test_normalising_is_idempotent_or_refuses(text: str) -> None:
    uri = "pkg://word-tools/" + text
    try:
        once = normalize_resource_uri(uri)
    except ResourceNameError:
        return
    assert normalize_resource_uri(once) == once or "%" in once
    assert "/../" not in once and not once.endswith("/..")
