"""The execution policy: the escape corpus on real files, rule precedence,
the four outcomes, and failing closed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from prism.errors import ExecutionDeniedError
from prism.security import (
    NOOP_REDACTOR,
    ExecutionAction,
    ExecutionDecision,
    ExecutionRule,
    allow_command,
    allow_kinds,
    ask_command,
    assert_path_inside_roots,
    authorize,
    create_execution_policy,
    create_redactor,
    deny_command,
    normalize_roots,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "Work"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print(1)\n")
    (outside / "secret.txt").write_text("top secret\n")
    return root, outside


def refused(path: object, roots: tuple[str, ...], **kw: object) -> str:
    with pytest.raises(ExecutionDeniedError) as caught:
        assert_path_inside_roots(path, roots, **kw)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "roots" in message
    return message


def test_inside_paths_resolve(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    roots = normalize_roots([root])
    assert assert_path_inside_roots("src/app.py", roots) == root.resolve() / "src" / "app.py"
    assert assert_path_inside_roots(str(root / "src" / "new.py"), roots).name == "new.py"
    assert assert_path_inside_roots("src/../src/app.py", roots).name == "app.py"


def test_escape_corpus_is_refused(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    roots = normalize_roots([root])
    secret = outside / "secret.txt"
    (root / "link_file").symlink_to(secret)
    (root / "link_dir").symlink_to(outside)
    (root / "dangling").symlink_to(outside / "not-yet")
    os.link(secret, root / "hardlink.txt")
    corpus = {
        "../outside/secret.txt": "outside the workspace roots",
        str(secret): "outside the workspace roots",
        "link_file": "resolves to",
        "link_dir/secret.txt": "resolves to",
        "dangling": "resolves to",
        "hardlink.txt": "hard links",
        f"/proc/self/root{secret}": "outside the workspace roots",
        str(root).replace("Work", "work") + "/src/app.py": "outside the workspace roots",
        "src/\0app.py": "NUL",
        "a" * 300: "over 255 bytes",
        "a/" * 2100: "over 4096",
        "": "empty",
    }
    for path, expected in corpus.items():
        message = refused(path, roots)
        assert expected in message, (path, message)
        assert str(root.resolve()) in message
    assert "bytes" in refused(b"src/app.py", roots)
    assert "must be a string" in refused(42, roots)
    assert secret.read_text() == "top secret\n"


def test_symlink_inside_roots_is_fine(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    (root / "alias.py").symlink_to(root / "src" / "app.py")
    roots = normalize_roots([root])
    assert assert_path_inside_roots("alias.py", roots).name == "app.py"


def test_bad_roots_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not an existing directory"):
        normalize_roots([tmp_path / "missing"])
    with pytest.raises(ValueError, match="at least one root"):
        normalize_roots([])
    with pytest.raises(ValueError, match="text path"):
        normalize_roots([b"/tmp"])  # type: ignore[list-item]


async def test_defaults_allow_read_and_deny_side_effects(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    policy = create_execution_policy([root], redactor=NOOP_REDACTOR)
    read = ExecutionAction("read", paths=("src/app.py",))
    assert (await policy.decide(read)).outcome == "allow"
    for kind in ("write", "edit", "delete", "move"):
        action = ExecutionAction(kind, paths=("src/app.py",))  # type: ignore[arg-type]
        decision = await policy.decide(action)
        assert decision.outcome == "ask"
        with pytest.raises(ExecutionDeniedError, match="no approver is configured"):
            await authorize(policy, action, redactor=NOOP_REDACTOR)
    shell = ExecutionAction("shell", argv=("ls",), cwd=str(root))
    with pytest.raises(ExecutionDeniedError, match="shell needs approval"):
        await authorize(policy, shell, redactor=NOOP_REDACTOR)


async def test_outside_roots_beats_every_rule_and_approver(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    calls: list[ExecutionAction] = []

    def approve(action: ExecutionAction, reason: str) -> bool:
        calls.append(action)
        return True

    policy = create_execution_policy(
        [root], [allow_kinds("write", "read")], approve, redactor=NOOP_REDACTOR
    )
    action = ExecutionAction("write", paths=(str(outside / "secret.txt"),))
    with pytest.raises(ExecutionDeniedError, match="outside the workspace roots"):
        await authorize(policy, action, redactor=NOOP_REDACTOR)
    shell = ExecutionAction("shell", argv=("ls",), cwd=str(outside))
    with pytest.raises(ExecutionDeniedError, match="outside the workspace roots"):
        await authorize(policy, shell, redactor=NOOP_REDACTOR)
    assert calls == []


async def test_command_rule_precedence(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    policy = create_execution_policy(
        [root],
        [
            allow_command("git", "..."),
            ask_command("git", "push", "..."),
            deny_command("git", "push", "--force", "..."),
            allow_command("ls"),
        ],
        redactor=NOOP_REDACTOR,
    )

    async def outcome(*argv: str) -> str:
        return (await policy.decide(ExecutionAction("shell", argv=argv, cwd=str(root)))).outcome

    assert await outcome("git", "status") == "allow"
    assert await outcome("git", "push", "origin") == "ask"
    assert await outcome("git", "push", "--force", "origin") == "deny"
    assert await outcome("ls", "-la") == "allow"
    # exact program: a path to another "git" is not the allowed git
    assert await outcome("/tmp/evil/git", "status") == "ask"
    # argv, not a shell string: one argument holding a shell command is not "ls"
    assert await outcome("sh", "-c", "ls; rm -rf /") == "ask"


def test_rule_args_patterns() -> None:
    rule = ExecutionRule("allow", program="pytest", args=("-q", "tests/*"))
    action = ExecutionAction("shell", argv=("pytest", "-q", "tests/a.py"))
    assert rule.matches(action, ())
    assert not rule.matches(ExecutionAction("shell", argv=("pytest", "-q")), ())
    assert not rule.matches(ExecutionAction("shell", argv=("pytest", "-q", "x", "y")), ())
    with pytest.raises(ValueError, match="not a string"):
        ExecutionRule("allow", program="x", args="-q")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="allow, deny or ask"):
        ExecutionRule("maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="execution kind"):
        ExecutionAction("format-disk")  # type: ignore[arg-type]


async def test_path_rules(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    policy = create_execution_policy(
        [root],
        [allow_kinds("write", paths=["src/*"]), ExecutionRule("deny", paths=("*.lock",))],
        redactor=NOOP_REDACTOR,
    )
    ok = ExecutionAction("write", paths=("src/new.py",))
    assert (await policy.decide(ok)).outcome == "allow"
    assert (await policy.decide(ExecutionAction("write", paths=("README",)))).outcome == "ask"
    assert (await policy.decide(ExecutionAction("read", paths=("x.lock",)))).outcome == "deny"


async def test_async_approver_four_outcomes(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    answers: list[object] = []

    async def approve(action: ExecutionAction, reason: str) -> object:
        assert "write needs approval" in reason
        return answers.pop(0)

    policy = create_execution_policy([root], approve=approve, redactor=NOOP_REDACTOR)  # type: ignore[arg-type]
    action = ExecutionAction("write", paths=("src/app.py",), tool_call_id="c1")

    answers.append(True)
    assert (await authorize(policy, action, redactor=NOOP_REDACTOR)) is action
    answers.append(ExecutionDecision.deny("not on Fridays"))
    with pytest.raises(ExecutionDeniedError, match="not on Fridays"):
        await authorize(policy, action, redactor=NOOP_REDACTOR)
    answers.append(False)
    with pytest.raises(ExecutionDeniedError, match="not approved"):
        await authorize(policy, action, redactor=NOOP_REDACTOR)
    narrowed = ExecutionAction("write", paths=("src/other.py",))
    answers.append(ExecutionDecision.allow_with_changes(narrowed, "narrowed"))
    changed = await authorize(policy, action, redactor=NOOP_REDACTOR)
    assert changed.paths == (str(root.resolve() / "src" / "other.py"),)
    widened = ExecutionAction("write", paths=(str(outside / "secret.txt"),))
    answers.append(ExecutionDecision.allow_with_changes(widened))
    with pytest.raises(ExecutionDeniedError, match="changed action refused"):
        await authorize(policy, action, redactor=NOOP_REDACTOR)
    answers.append(ExecutionDecision.allow_with_changes(ExecutionAction("read", paths=("a",))))
    with pytest.raises(ExecutionDeniedError, match="change the action's kind"):
        await authorize(policy, action, redactor=NOOP_REDACTOR)
    answers.append("yes please")
    with pytest.raises(ExecutionDeniedError, match="non-decision"):
        await authorize(policy, action, redactor=NOOP_REDACTOR)


async def test_raising_approver_and_policy_fail_closed_redacted(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    secret = "sk-live-123456789"

    def approve(action: ExecutionAction, reason: str) -> bool:
        raise RuntimeError(f"token {secret} expired")

    redactor = create_redactor([secret])
    policy = create_execution_policy([root], approve=approve, redactor=redactor)
    with pytest.raises(ExecutionDeniedError) as caught:
        await authorize(policy, ExecutionAction("write", paths=("a",)), redactor=NOOP_REDACTOR)
    assert "approver failed: RuntimeError" in str(caught.value)
    assert secret not in str(caught.value)

    class Broken:
        roots = (str(root),)

        def decide(self, action: ExecutionAction) -> ExecutionDecision:
            raise RuntimeError(secret)

    with pytest.raises(ExecutionDeniedError) as caught:
        await authorize(Broken(), ExecutionAction("read", paths=("a",)), redactor=NOOP_REDACTOR)
    assert str(caught.value) == "execution policy failed: RuntimeError"


async def test_dispatch_reports_policy_denied_redacted() -> None:
    from prism.tools import POLICY_DENIED, ToolDefinition, create_tool_registry, dispatch_tool_call

    secret = "sk-live-abcdef123456"

    def guarded(args: dict[str, object], ctx: object) -> str:
        raise ExecutionDeniedError(f"refused: token {secret}")

    registry = create_tool_registry([ToolDefinition("guarded", guarded)])
    result = await dispatch_tool_call(
        {"id": "c1", "name": "guarded", "arguments": {}},
        registry=registry,
        redactor=create_redactor([secret]),
    )
    assert result["isError"] and result["value"]["code"] == POLICY_DENIED  # type: ignore[index]
    assert secret not in str(result)
