"""Configuration: config layers, config files, package manifests, settings."""

from prism.config.files import (
    DEFAULT_MAX_CONFIG_BYTES,
    ConfigFile,
    default_user_config_path,
    load_config_files,
    read_config_file,
)
from prism.config.layers import ConfigLayer, merge_config_layers
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
