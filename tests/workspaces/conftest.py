from __future__ import annotations

from pathlib import Path

import pytest
from tests.workspaces.gitrepo import make_repo

from prism.workspaces import OwnershipScope

SCOPE = OwnershipScope(tenant="t1", account="a1", user="u1")
OTHER = OwnershipScope(tenant="t2", account="a1", user="u1")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "app")


@pytest.fixture
def worktree_dir(tmp_path: Path) -> Path:
    return tmp_path / "worktrees"
