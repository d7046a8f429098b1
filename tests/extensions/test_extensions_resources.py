from __future__ import annotations

from typing import Any

import pytest

from prism.errors import ManifestError, PermissionDeniedError, ResourceError
from prism.resources import (
    DictResourceLoader,
    display_uri,
    load_json_resource,
    load_manifest_resource,
    load_text_resource,
)
from prism.security import NOOP_REDACTOR, create_redactor
from prism.security.permissions import create_allowlist_policy

SECRET = "pw-abcdef0123456789"


class RecordingLoader:
    def __init__(self, result: Any) -> None:
        self.result = result
        self.calls: list[str] = []

    async def load(self, uri: str) -> Any:
        self.calls.append(uri)
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


@pytest.mark.anyio
async def test_text_from_text_or_bytes() -> None:
    loader = DictResourceLoader({"mem://a": "héllo", "mem://b": "\ufeffhi".encode()})
    assert (await load_text_resource(loader, "mem://a", redactor=NOOP_REDACTOR)).text == "héllo"
    resource = await load_text_resource(loader, "mem://b", redactor=NOOP_REDACTOR)
    assert (resource.uri, resource.text) == ("mem://b", "hi")


@pytest.mark.anyio
async def test_async_loader_and_json() -> None:
    loader = RecordingLoader({"uri": "mem://j", "text": '{"a": [1, 2]}'})
    resource = await load_json_resource(loader, "mem://j", redactor=NOOP_REDACTOR)
    assert resource.value == {"a": [1, 2]}
    assert loader.calls == ["mem://j"]


@pytest.mark.anyio
async def test_size_limit_counts_utf8_bytes() -> None:
    loader = DictResourceLoader({"mem://t": "é" * 6, "mem://d": b"x" * 11})
    with pytest.raises(ResourceError, match="resource mem://t: larger than 11 bytes"):
        await load_text_resource(loader, "mem://t", max_bytes=11, redactor=NOOP_REDACTOR)
    assert (
        await load_text_resource(loader, "mem://t", max_bytes=12, redactor=NOOP_REDACTOR)
    ).text == "é" * 6
    with pytest.raises(ResourceError, match="larger than 10 bytes"):
        await load_text_resource(loader, "mem://d", max_bytes=10, redactor=NOOP_REDACTOR)


@pytest.mark.anyio
async def test_invalid_utf8_reports_offset() -> None:
    loader = DictResourceLoader({"mem://bad": b"ok\xff"})
    with pytest.raises(ResourceError, match=r"resource mem://bad: not valid UTF-8 \(byte 2\)"):
        await load_text_resource(loader, "mem://bad", redactor=NOOP_REDACTOR)


@pytest.mark.anyio
async def test_invalid_json_reports_position_not_contents() -> None:
    loader = DictResourceLoader({"mem://j": '{"token": "' + SECRET + '",}'})
    with pytest.raises(ResourceError) as info:
        await load_json_resource(loader, "mem://j", redactor=NOOP_REDACTOR)
    message = str(info.value)
    assert message.startswith("resource mem://j: invalid JSON (")
    assert "line 1 column" in message and SECRET not in message


@pytest.mark.anyio
async def test_json_constants_refused() -> None:
    loader = DictResourceLoader({"mem://n": "[NaN]"})
    with pytest.raises(ResourceError, match="NaN is not valid JSON"):
        await load_json_resource(loader, "mem://n", redactor=NOOP_REDACTOR)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("result", "reason"),
    [
        ("text", "loader returned str, not a mapping"),
        ({"uri": "mem://x"}, "needs exactly one of 'text' or 'data'"),
        ({"text": "a", "data": b"a"}, "needs exactly one of 'text' or 'data'"),
        ({"text": 5}, "'text' must be a string"),
        ({"data": "str"}, "'data' must be bytes"),
        ({"uri": "mem://other", "text": "a"}, "loader answered for a different uri"),
    ],
)
async def test_malformed_loader_results(result: Any, reason: str) -> None:
    with pytest.raises(ResourceError, match=reason):
        await load_text_resource(RecordingLoader(result), "mem://x", redactor=NOOP_REDACTOR)


@pytest.mark.anyio
async def test_loader_failure_redacted_and_uri_credentials_hidden() -> None:
    loader = RecordingLoader(OSError(f"auth failed for {SECRET}"))
    uri = f"https://user:{SECRET}@example.test/config.json?token={SECRET}"
    with pytest.raises(ResourceError) as info:
        await load_text_resource(loader, uri, redactor=create_redactor([SECRET]))
    assert str(info.value) == (
        "resource https://example.test/config.json: loader failed (auth failed for [REDACTED])"
    )


@pytest.mark.anyio
async def test_permission_checked_before_loader_runs() -> None:
    loader = RecordingLoader({"text": "x"})
    policy = create_allowlist_policy(resources=["mem://allowed/*"])
    assert (
        await load_text_resource(
            loader, "mem://allowed/a", permission_policy=policy, redactor=NOOP_REDACTOR
        )
    ).text == "x"
    with pytest.raises(PermissionDeniedError, match="resource 'mem://secret' is not permitted"):
        await load_text_resource(
            loader, "mem://secret", permission_policy=policy, redactor=NOOP_REDACTOR
        )
    assert loader.calls == ["mem://allowed/a"]


@pytest.mark.anyio
@pytest.mark.parametrize("uri", ["", "   ", "mem://a\nb", 5])
async def test_bad_uris(uri: Any) -> None:
    loader = RecordingLoader({"text": "x"})
    with pytest.raises(ResourceError, match="resource uri"):
        await load_text_resource(loader, uri, redactor=NOOP_REDACTOR)
    assert loader.calls == []


@pytest.mark.anyio
async def test_bad_loader_and_limit() -> None:
    with pytest.raises(ResourceError, match="callable load"):
        await load_text_resource(object(), "mem://a", redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
    with pytest.raises(ResourceError, match="max_bytes"):
        await load_text_resource(
            DictResourceLoader({}), "mem://a", max_bytes=-1, redactor=NOOP_REDACTOR
        )


@pytest.mark.anyio
async def test_manifest_resource() -> None:
    loader = DictResourceLoader(
        {
            "mem://good": '{"name": "demo", "version": "1.0.0", "contributions": {"tool": ["echo"]}}',
            "mem://bad": '{"name": "demo", "version": "1", "scripts": {"postinstall": "rm -rf /"}}',
            "mem://array": "[]",
        }
    )
    resource = await load_manifest_resource(loader, "mem://good", redactor=NOOP_REDACTOR)
    assert resource.manifest.contribution_names("tool") == ("echo",)
    with pytest.raises(ManifestError) as info:
        await load_manifest_resource(loader, "mem://bad", redactor=NOOP_REDACTOR)
    assert str(info.value).startswith("resource mem://bad: invalid package manifest: ")
    assert "scripts: executable content is not allowed" in str(info.value)
    with pytest.raises(ManifestError, match="manifest must be a JSON object, got array"):
        await load_manifest_resource(loader, "mem://array", redactor=NOOP_REDACTOR)


def test_display_uri() -> None:
    assert display_uri("file:///a/b.json", redactor=NOOP_REDACTOR) == "file:///a/b.json"
    assert display_uri("https://u:p@h:8080/x?q=1#f", redactor=NOOP_REDACTOR) == "https://h:8080/x"
