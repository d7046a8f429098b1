"""Children in their own git worktrees: real repositories made here, real
``git worktree add``/``remove`` through prism.workspaces, the child's coding
tools (prism.coding) rooted in its worktree."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from subagent_scenario import MODEL, parent_script, tool_results, turn_count

from prism.approvals import requires_approval
from prism.coding import create_coding_tools
from prism.providers import (
    create_mock_provider,
    provider_done,
    provider_text_delta,
    provider_tool_call,
)
from prism.runtime import Agent, create_agent
from prism.security import NOOP_REDACTOR
from prism.security.execution import ExecutionRule, create_execution_policy
from prism.stores import MemorySessionStore
from prism.subagents import (
    ChildContext,
    ChildSpec,
    DelegationOutcome,
    create_supervisor,
    create_worktree_child_factory,
)
from prism.tools import define_tool
from prism.workspaces import OwnershipScope, create_workspaces

pytestmark = pytest.mark.anyio
SCOPE = OwnershipScope(tenant="t1")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "T")
    (root / "README.md").write_text("main checkout\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    return root


def writer_script(main_file: str) -> Any:
    def script(request: Any) -> list[Any]:
        if turn_count(request) == 0:
            return [
                provider_tool_call(
                    "w1", "write", {"path": "notes.txt", "content": "child notes\n"}
                ),
                provider_tool_call("r1", "read", {"path": main_file}),
                provider_done("tool_use"),
            ]
        return [provider_text_delta(json.dumps(tool_results(request))), provider_done()]

    return script


class Setup:
    def __init__(self, tmp_path: Path, repo: Path, **options: Any) -> None:
        self.repo = repo
        self.workspaces = create_workspaces(
            None, worktree_roots={"app": repo}, worktree_dir=tmp_path / "worktrees"
        )
        self.contexts: list[ChildContext] = []
        self.outcomes: list[DelegationOutcome] = []
        self.isolated = create_worktree_child_factory(
            self.child,
            workspaces=self.workspaces,
            repository_id=options.pop("repository_id", "app"),
            scope=SCOPE,
            after=self.outcomes.append,
            **options,
        )
        self.supervisor = create_supervisor(
            children={
                "coder": ChildSpec(self.isolated.create_agent, "writes notes"),
                "publisher": ChildSpec(self.isolated.create_agent, "publishes"),
            },
            hooks={"after": self.isolated.after},
        )
        self.store = MemorySessionStore()

    def child(self, ctx: ChildContext) -> Agent:
        self.contexts.append(ctx)
        assert ctx.cwd is not None
        if ctx.child == "publisher":
            publish = requires_approval(define_tool("publish", lambda _a, _c: str(ctx.cwd)))
            script = lambda r: (  # noqa: E731
                [provider_tool_call("p1", "publish", {}), provider_done("tool_use")]
                if turn_count(r) == 0
                else [provider_text_delta("published"), provider_done()]
            )
            return create_agent(model=MODEL, provider=create_mock_provider(script), tools=[publish])
        policy = create_execution_policy(
            [ctx.cwd], [ExecutionRule("allow", kinds=frozenset({"write"}))], redactor=NOOP_REDACTOR
        )
        tools = create_coding_tools(ctx.cwd, execution_policy=policy, redactor=NOOP_REDACTOR)
        provider = create_mock_provider(writer_script(str(self.repo / "README.md")))
        return create_agent(model=MODEL, provider=provider, tools=tools)

    def parent(self, calls: list[tuple[str, str]]) -> Agent:
        return create_agent(
            model=MODEL,
            provider=create_mock_provider(parent_script(calls)),
            tools=[self.supervisor.tool],
            store=self.store,
            durable=True,
        )


async def test_a_child_works_in_its_own_worktree_which_is_removed_once(
    tmp_path: Path, repo: Path
) -> None:
    s = Setup(tmp_path, repo, force_cleanup=True)
    result = await s.parent([("c1", "coder")]).create_session("lead").run("go")
    value = json.loads(result.text)["c1"]["result"]
    child = json.loads(value["answer"])
    (ctx,) = s.contexts
    worktree = ctx.cwd
    assert worktree is not None and worktree.parent.parent == tmp_path / "worktrees"
    # The child wrote into its worktree, and could not read the main checkout.
    assert child["w1"]["error"] is False
    assert child["r1"]["error"] is True and "outside" in json.dumps(child["r1"]).lower()
    assert not (repo / "notes.txt").exists()
    # Its branch is agent/<delegation id>; the worktree is gone once it ended.
    record = await s.workspaces.get(ctx.delegation_id, scope=SCOPE)
    assert record is not None and record.state == "closed"
    assert record.legs[0].branch == f"agent/{ctx.delegation_id}"
    assert not worktree.exists()
    # No commits on it, so the default cleanup policy deleted the branch too.
    assert git(repo, "branch", "--list").split() == ["*", "main"]
    assert [o.outcome for o in s.outcomes] == ["success"]
    # A second terminal hook call for the same delegation does nothing.
    await s.isolated.after(s.outcomes[0])
    assert len(s.outcomes) == 2  # the host's hook is chained each time ...
    assert (await s.workspaces.get(ctx.delegation_id, scope=SCOPE)).state == "closed"  # type: ignore[union-attr]


async def test_a_dirty_worktree_is_kept_and_the_refusal_reported(
    tmp_path: Path, repo: Path
) -> None:
    s = Setup(tmp_path, repo)
    result = await s.parent([("c1", "coder")]).create_session("lead").run("go")
    value = json.loads(result.text)["c1"]["result"]
    assert "WorkspaceDirtyError" in value["hookError"]
    (ctx,) = s.contexts
    assert ctx.cwd is not None and (ctx.cwd / "notes.txt").read_text() == "child notes\n"
    record = await s.workspaces.get(ctx.delegation_id, scope=SCOPE)
    assert record is not None and record.state == "open"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"repository_id": "nope"}, "nope"),
        ({"branch": "taken"}, "already exists"),
    ],
)
async def test_a_workspace_that_cannot_be_made_rejects_before_the_child_exists(
    tmp_path: Path, repo: Path, options: dict[str, Any], message: str
) -> None:
    git(repo, "branch", "taken")
    s = Setup(tmp_path, repo, **options)
    result = await s.parent([("c1", "coder")]).create_session("lead").run("go")
    error = json.loads(result.text)["c1"]["result"]["message"]
    assert "DelegationRejectedError" in error and message in error
    assert s.contexts == []  # the wrapped factory never ran
    (outcome,) = s.outcomes
    assert outcome.outcome == "rejected"
    assert await s.store.list(outcome.delegation_id) == []
    assert git(repo, "worktree", "list").count("\n") == 1


async def test_no_worktree_roots_fails_closed(tmp_path: Path, repo: Path) -> None:
    s = Setup(tmp_path, repo)
    s.isolated.workspaces = create_workspaces(None, worktree_dir=tmp_path / "worktrees")
    result = await s.parent([("c1", "coder")]).create_session("lead").run("go")
    error = json.loads(result.text)["c1"]["result"]["message"]
    assert "no worktree_roots configured" in error and s.contexts == []


async def test_a_suspended_child_keeps_its_worktree_and_resumes_in_the_same_one(
    tmp_path: Path, repo: Path
) -> None:
    s = Setup(tmp_path, repo)
    calls = [("c1", "publisher")]
    paused = await s.parent(calls).create_session("lead").run("go")
    (approval,) = paused.pending_approvals
    (first,) = s.contexts
    assert first.cwd is not None and first.cwd.is_dir()
    assert s.outcomes == []  # not terminal: nothing cleaned
    record = await s.workspaces.get(first.delegation_id, scope=SCOPE)
    assert record is not None and record.state == "open"

    done = await s.parent(calls).create_session("lead").resume({approval["id"]: "approve"})
    assert done is not None and json.loads(done.text)["c1"]["result"]["answer"] == "published"
    _, again = s.contexts
    assert (again.resumed, again.cwd, again.delegation_id) == (True, first.cwd, first.delegation_id)
    assert [o.outcome for o in s.outcomes] == ["success"]
    assert not first.cwd.exists()
