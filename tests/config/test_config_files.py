from __future__ import annotations

import os
import traceback
from pathlib import Path

import pytest

from prism.config import (
    ConfigFile,
    default_user_config_path,
    load_config_files,
    merge_config_layers,
    read_config_file,
)
from prism.errors import ConfigError, ConfigFileError

SECRET = "sk-file-secret-0123456789"


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def test_default_user_config_path_respects_xdg() -> None:
    assert default_user_config_path(env={"XDG_CONFIG_HOME": "/xdg", "HOME": "/home/u"}) == Path(
        "/xdg/prism/config.json"
    )
    assert default_user_config_path("demo", env={"HOME": "/home/u"}) == Path(
        "/home/u/.config/demo/config.json"
    )
    # Relative XDG values are ignored, as the XDG spec says.
    assert default_user_config_path(env={"XDG_CONFIG_HOME": "rel", "HOME": "/h"}) == Path(
        "/h/.config/prism/config.json"
    )


def test_default_user_config_path_uses_process_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_user_config_path() == tmp_path / "prism" / "config.json"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_user_config_path() == tmp_path / ".config" / "prism" / "config.json"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b"])
def test_default_user_config_path_rejects_bad_app_names(name: str) -> None:
    with pytest.raises(ConfigError, match="app_name"):
        default_user_config_path(name)


def test_read_config_file(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", '{"model": {"provider": "mock"}}')
    assert read_config_file(path) == {"model": {"provider": "mock"}}
    bom = write(tmp_path / "bom.json", "\ufeff{}".encode())
    assert read_config_file(str(bom)) == {}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            '{"apiKey": "' + SECRET + '",}',
            r"invalid JSON \(Expecting property name enclosed in double quotes at line 1 column \d+\)",
        ),
        ('["' + SECRET + '"]', "must contain a JSON object, got array"),
        ('"' + SECRET + '"', "must contain a JSON object, got string"),
        ("", r"invalid JSON \(Expecting value at line 1 column 1\)"),
        ('{"a": NaN}', r"invalid JSON \(NaN is not valid JSON\)"),
        (b'{"a": "\xff"}', r"not valid UTF-8 \(byte 7\)"),
    ],
)
def test_bad_files_fail_closed_naming_path_and_reason_only(
    tmp_path: Path, content: str | bytes, reason: str
) -> None:
    path = write(tmp_path / "bad.json", content)
    with pytest.raises(ConfigFileError, match=reason) as info:
        read_config_file(path)
    message = str(info.value)
    assert message.startswith(f"config file {path}: ")
    assert SECRET not in message
    assert SECRET not in "".join(traceback.format_exception(info.value))


def test_missing_directory_and_too_large(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"config file .*nope\.json: not found"):
        read_config_file(tmp_path / "nope.json")
    with pytest.raises(ConfigFileError, match="is a directory"):
        read_config_file(tmp_path)
    big = write(tmp_path / "big.json", '{"a": "' + "x" * 100 + '"}')
    with pytest.raises(ConfigFileError, match="larger than 50 bytes"):
        read_config_file(big, max_bytes=50)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a non-root posix user")
def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path / "locked.json", "{}")
    path.chmod(0)
    try:
        with pytest.raises(ConfigFileError, match="permission denied"):
            read_config_file(path)
    finally:
        path.chmod(0o600)


def test_load_config_files_in_order_skipping_optional_missing(tmp_path: Path) -> None:
    user = write(tmp_path / "user.json", '{"model": {"provider": "mock", "model": "a"}, "x": [1]}')
    project = write(tmp_path / "project.json", '{"model": {"model": "b"}, "x": [2]}')
    layers = load_config_files(
        [
            ConfigFile("user", user),
            ConfigFile("missing", tmp_path / "absent.json", optional=True),
            ConfigFile("project", str(project)),
        ]
    )
    assert [layer.name for layer in layers] == ["user", "project"]
    assert merge_config_layers(layers) == {"model": {"provider": "mock", "model": "b"}, "x": [2]}


def test_required_missing_and_optional_invalid_fail(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="not found"):
        load_config_files([ConfigFile("required", tmp_path / "absent.json")])
    bad = write(tmp_path / "bad.json", "[]")
    with pytest.raises(ConfigFileError, match="must contain a JSON object"):
        load_config_files([ConfigFile("opt", bad, optional=True)])


def test_config_file_validation() -> None:
    with pytest.raises(ConfigError, match="layer name"):
        ConfigFile("", "x.json")
    with pytest.raises(ConfigError, match="path must be a non-empty path"):
        ConfigFile("n", "")
    with pytest.raises(ConfigError, match="expects ConfigFile values"):
        load_config_files([{"name": "n", "path": "p"}])  # type: ignore[list-item]
