"""``prism providers add|list``: providers configured in the user config file.

An entry names a preset and how to reach it: the *name* of the environment
variable that holds the key (never the key), an optional base URL and a
default model. ``prism --provider NAME`` reads the entry, and nothing else in
the file, when NAME is not ``mock``. The file is rewritten atomically
(temporary file + rename) with every other key kept, and a file that cannot
be read or is not a JSON object is refused, never overwritten.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from prism.cli.usage import UsageProblem, has_blank_or_control

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PROVIDERS_KEY = "providers"


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    from prism.config.files import default_user_config_path

    return default_user_config_path(env=os.environ if environ is None else environ)


def _presets() -> Mapping[str, Any]:
    from prism.providers.packages import PROVIDER_PRESETS

    return PROVIDER_PRESETS


def read_user_config(path: Path) -> dict[str, Any]:
    """The file's JSON object, ``{}`` when it does not exist; ``UsageProblem``
    naming the path and the reason (never the contents) otherwise."""
    if not path.exists():
        return {}
    from prism.config.files import read_config_file
    from prism.errors import ConfigFileError

    try:
        return dict(read_config_file(path))
    except ConfigFileError as error:
        raise UsageProblem(str(error)) from None


def configured_provider(
    name: str, environ: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The user config entry for ``name``, validated, or None."""
    path = user_config_path(environ)
    providers = read_user_config(path).get(PROVIDERS_KEY, {})
    if not isinstance(providers, dict):
        raise UsageProblem(f"config file {path}: key {PROVIDERS_KEY!r} must be a JSON object")
    entry = providers.get(name)
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise UsageProblem(f"config file {path}: providers.{name} must be a JSON object")
    for key in ("apiKeyEnv", "baseUrl", "model"):
        if key in entry and not isinstance(entry[key], str):
            raise UsageProblem(f"config file {path}: providers.{name}.{key} must be a string")
    if "baseUrl" in entry:
        check_base_url(entry["baseUrl"], f"config file {path}: providers.{name}.baseUrl")
    return entry


def check_api_key_env(value: str) -> str:
    if not ENV_NAME.fullmatch(value):
        # Whatever was typed is not echoed: it may be the key itself.
        raise UsageProblem(
            "--api-key-env takes the name of an environment variable (letters, digits, "
            "underscores), not the key itself"
        )
    return value


def check_base_url(value: str, what: str = "--base-url") -> str:
    # Checked on the raw text: urlsplit silently deletes CR, LF and tabs, so
    # "http://h\nx/v1" would pass and fail only at request time.
    if has_blank_or_control(value):
        raise UsageProblem(
            f"{what} must not contain spaces, tabs, line breaks or control characters"
        )
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageProblem(f"{what} must be an http(s) URL with a host")
    if parts.username or parts.password or parts.query or parts.fragment:
        # Credentials or tokens in a URL would be stored in plain text.
        raise UsageProblem(
            f"{what} must not carry credentials, a query or a fragment; "
            "put the key in the variable --api-key-env names"
        )
    return value.rstrip("/")


def write_user_config(path: Path, data: Mapping[str, Any]) -> None:
    """Atomic replace: readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageProblem(f"providers: {message}")


def _parser() -> _Parser:
    parser = _Parser(prog="prism providers", allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", metavar="add|list")
    commands.required = True
    add = commands.add_parser(
        "add",
        help="Configure a preset in the user config file.",
        allow_abbrev=False,
    )
    add.add_argument("preset", help="A provider preset name.")
    add.add_argument("--api-key-env", metavar="NAME", help="Variable that holds the key.")
    add.add_argument("--base-url", metavar="URL", help="Endpoint (an OpenAI-compatible server).")
    add.add_argument("--model", metavar="ID", help="Default model.")
    commands.add_parser("list", help="Show configured providers and whether keys are set.")
    for sub in commands.choices.values():
        sub.error = parser.error  # type: ignore[method-assign]
    return parser


def providers_add(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    presets = _presets()
    if args.preset not in presets:
        raise UsageProblem(
            f"providers add: unknown preset {args.preset!r} (choose from {', '.join(sorted(presets))})"
        )
    package = presets[args.preset]
    entry: dict[str, Any] = {"preset": args.preset}
    entry["apiKeyEnv"] = check_api_key_env(args.api_key_env or package.auth.env_vars[0])
    if args.base_url is not None:
        entry["baseUrl"] = check_base_url(args.base_url)
    if args.model is not None:
        if not args.model.strip():
            raise UsageProblem("--model must not be empty")
        if has_blank_or_control(args.model):
            raise UsageProblem(
                "--model must not contain spaces, tabs, line breaks or control characters"
            )
        entry["model"] = args.model
    path = user_config_path(environ)
    data = read_user_config(path)
    providers = data.setdefault(PROVIDERS_KEY, {})
    if not isinstance(providers, dict):
        raise UsageProblem(f"config file {path}: key {PROVIDERS_KEY!r} must be a JSON object")
    providers[args.preset] = entry
    write_user_config(path, data)
    state = "set" if environ.get(entry["apiKeyEnv"]) else "not set"
    sys.stdout.write(
        f"added {args.preset} to {path} (key from ${entry['apiKeyEnv']}, currently {state})\n"
    )
    return 0


def providers_list(environ: Mapping[str, str]) -> int:
    path = user_config_path(environ)
    providers = read_user_config(path).get(PROVIDERS_KEY, {})
    if not isinstance(providers, dict) or not providers:
        sys.stdout.write(f"no providers configured in {path} (prism providers add PRESET)\n")
        return 0
    for name in sorted(providers):
        entry = configured_provider(name, environ) or {}
        key_env = entry.get("apiKeyEnv", "")
        state = "set" if key_env and environ.get(key_env) else "missing"
        details = [f"key ${key_env} {state}"]
        if "model" in entry:
            details.append(f"model {entry['model']}")
        if "baseUrl" in entry:
            details.append(f"base URL {entry['baseUrl']}")
        sys.stdout.write(f"{name}: {', '.join(details)}\n")
    return 0


def providers_main(args: Sequence[str], environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    parsed = _parser().parse_args(list(args))
    if parsed.command == "add":
        return providers_add(parsed, env)
    return providers_list(env)
