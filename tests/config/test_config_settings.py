from __future__ import annotations

from typing import Any

import pytest

from prism.config import DictSettingsProvider, SettingsProvider, create_settings_provider
from prism.errors import SettingsError

SECRET = "sk-settings-abcdef012345"


def provider() -> DictSettingsProvider:
    return create_settings_provider(
        {
            "model": "m1",
            "retries": 3,
            "verbose": False,
            "ratio": 1,
            "openai": {"apiKey": SECRET, "baseUrl": "https://api.example.test"},
            "observational-memory": {"observeAfterTokens": 10000},
        },
        secret_keys=["openai.apiKey"],
    )


def test_get_has_keys_and_dotted_paths() -> None:
    settings = provider()
    assert isinstance(settings, SettingsProvider)
    assert settings.get("model") == "m1"
    assert settings.get("observational-memory.observeAfterTokens") == 10000
    assert settings.get("missing", "dflt") == "dflt"
    assert settings.has("openai.baseUrl") and not settings.has("openai.nope")
    assert settings.keys()[0] == "model"
    assert settings.get("openai.apiKey") == SECRET  # secret values are still usable


def test_typed_getters() -> None:
    settings = provider()
    assert settings.get_str("model") == "m1"
    assert settings.get_int("retries") == 3
    assert settings.get_bool("verbose") is False
    assert settings.get_int("absent", 7) == 7
    assert settings.require("ratio", float) == 1


def test_errors_name_key_and_type_never_value() -> None:
    settings = provider()
    with pytest.raises(SettingsError, match="setting 'nope' is missing"):
        settings.require("nope")
    with pytest.raises(SettingsError) as info:
        settings.require("openai.apiKey", int)
    assert str(info.value) == "setting 'openai.apiKey' must be int, got string"
    assert SECRET not in str(info.value)
    with pytest.raises(SettingsError, match="setting 'verbose' must be int, got boolean"):
        settings.get_int("verbose")
    with pytest.raises(SettingsError, match="dot-separated"):
        settings.get("a..b")


def test_public_view_and_repr_mask_secrets() -> None:
    settings = provider()
    public = settings.to_public_dict()
    assert public["openai"] == {"apiKey": "[REDACTED]", "baseUrl": "https://api.example.test"}
    assert SECRET not in repr(settings)
    section = settings.section("openai")
    assert section.get("apiKey") == SECRET
    assert SECRET not in repr(section)
    whole_secret = create_settings_provider({"creds": {"a": "x" * 20}}, secret_keys=["creds"])
    assert whole_secret.to_public_dict() == {"creds": "[REDACTED]"}
    assert whole_secret.section("creds").to_public_dict() == {"a": "[REDACTED]"}


def test_data_is_copied() -> None:
    source: dict[str, Any] = {"a": {"b": 1}}
    settings = create_settings_provider(source)
    source["a"]["b"] = 2
    assert settings.get("a.b") == 1
    got = settings.get("a")
    got["b"] = 3
    assert settings.get("a.b") == 1


def test_bad_settings_data() -> None:
    with pytest.raises(SettingsError, match="settings must be a JSON object, got array"):
        create_settings_provider([])  # type: ignore[arg-type]
    with pytest.raises(Exception, match="fn is a callable"):
        create_settings_provider({"fn": print})
    with pytest.raises(SettingsError, match="not a single string"):
        create_settings_provider({}, secret_keys="apiKey")
    with pytest.raises(SettingsError, match="must be an object, got string"):
        provider().section("model")
