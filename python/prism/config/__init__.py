"""Configuration: config layers, config files, package manifests, settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism._lazy import attach

if TYPE_CHECKING:
    from prism.config.files import (
        DEFAULT_MAX_CONFIG_BYTES,
        ConfigFile,
        default_user_config_path,
        load_config_files,
        read_config_file,
    )
    from prism.config.layers import (
        ConfigLayer,
        merge_config_layers,
    )
    from prism.config.manifests import (
        EXECUTABLE_KEYS,
        MANIFEST_KEYS,
        PackageManifest,
        is_semver,
        validate_package_manifest,
    )
    from prism.config.settings import (
        DictSettingsProvider,
        SettingsProvider,
        create_settings_provider,
    )

_EXPORTS: dict[str, str] = {
    "DEFAULT_MAX_CONFIG_BYTES": "prism.config.files",
    "ConfigFile": "prism.config.files",
    "default_user_config_path": "prism.config.files",
    "load_config_files": "prism.config.files",
    "read_config_file": "prism.config.files",
    "ConfigLayer": "prism.config.layers",
    "merge_config_layers": "prism.config.layers",
    "EXECUTABLE_KEYS": "prism.config.manifests",
    "MANIFEST_KEYS": "prism.config.manifests",
    "PackageManifest": "prism.config.manifests",
    "is_semver": "prism.config.manifests",
    "validate_package_manifest": "prism.config.manifests",
    "DictSettingsProvider": "prism.config.settings",
    "SettingsProvider": "prism.config.settings",
    "create_settings_provider": "prism.config.settings",
}
__getattr__, __dir__ = attach(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_MAX_CONFIG_BYTES",
    "EXECUTABLE_KEYS",
    "MANIFEST_KEYS",
    "ConfigFile",
    "ConfigLayer",
    "DictSettingsProvider",
    "PackageManifest",
    "SettingsProvider",
    "create_settings_provider",
    "default_user_config_path",
    "is_semver",
    "load_config_files",
    "merge_config_layers",
    "read_config_file",
    "validate_package_manifest",
]
