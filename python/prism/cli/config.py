"""Reading the file --config names, through prism.config.files.

The CLI never looks for config on its own: only an explicit --config path is
read, and a failure names the path and the reason, never the contents.
"""

from __future__ import annotations

from typing import Any

from prism.config.files import read_config_file
from prism.errors import ConfigFileError


def read_cli_config(path: str) -> dict[str, Any]:
    """The JSON object in ``path``; ``ValueError`` with a one-line reason."""
    try:
        return dict(read_config_file(path))
    except ConfigFileError as error:  # already "config file <path>: <reason>"
        raise ValueError(str(error)) from None
