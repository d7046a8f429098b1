"""read, write and edit on real files: limits, encodings, the stale-read
guard, atomic writes, exact-once edits and every bad input of issue 27."""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import Any

import pytest
from coding_helpers import Call, error_of, make_call

from prism.coding import CodingLimits, create_coding_tools
from prism.security import NOOP_REDACTOR, allow_kinds, create_execution_policy

pytestmark = pytest.mark.anyio


async def test_read_numbers_lines_and_says_what_was_cut(workspace: Path, call: Call) -> None:
    (workspace / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 3001)))
    result = await call("read", path="big.txt")
    text = result["value"]
    assert text.startswith("     1\tline 1\n")
    assert "showing lines 1-2000 of 3000; read on with offset=2001" in text
    tail = (await call("read", path="big.txt", offset=2999, limit=5))["value"]
    assert "  2999\tline 2999\n  3000\tline 3000" in tail
    (workspace / "wide.txt").write_text("x" * 5000 + "\n")
    assert "[... line cut]" in (await call("read", path="wide.txt"))["value"]


async def test_read_encodings(workspace: Path, call: Call) -> None:
    (workspace / "bom.txt").write_bytes(codecs.BOM_UTF8 + "héllo\n".encode())
    (workspace / "u16.txt").write_bytes(codecs.BOM_UTF16_LE + "wide\n".encode("utf-16-le"))
    (workspace / "latin.txt").write_bytes("café\n".encode("latin-1"))
    assert "héllo" in (await call("read", path="bom.txt"))["value"]
    u16 = (await call("read", path="u16.txt"))["value"]
    assert "wide" in u16 and "utf-16-le" in u16
    latin = (await call("read", path="latin.txt"))["value"]
    assert "café" in latin and "decoded as Latin-1" in latin


async def test_read_refuses_binary_huge_and_images(workspace: Path, call: Call) -> None:
    (workspace / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02")
    assert "looks binary" in error_of(await call("read", path="blob.bin"))
    with open(workspace / "huge.log", "wb") as handle:
        handle.truncate(1 << 30)  # a sparse 1 GiB file: nothing is read
    assert "1.0 GiB, over the 16.0 MiB limit" in error_of(await call("read", path="huge.log"))
    (workspace / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 20)
    assert "looks like image/png but is not readable" in error_of(
        await call("read", path="pic.png")
    )
    assert "is a directory" in error_of(await call("read", path="src"))
    assert "does not exist" in error_of(await call("read", path="nope.txt"))


async def test_write_needs_a_fresh_read(workspace: Path, call: Call, events: list[Any]) -> None:
    target = workspace / "src" / "app.py"
    refused = error_of(await call("write", path="src/app.py", content="x = 2\n"))
    assert "has not been read in this session" in refused
    assert target.read_text() == "def main():\n    return 1\n"
    await call("read", path="src/app.py")
    # another session's read does not count
    assert "not been read" in error_of(
        await call("write", session="s2", path="src/app.py", content="y")
    )
    target.write_text("changed behind the model's back\n")
    stale = error_of(await call("write", path="src/app.py", content="x = 2\n"))
    assert "changed on disk since it was read" in stale
    assert target.read_text() == "changed behind the model's back\n"
    await call("read", path="src/app.py")
    ok = await call("write", path="src/app.py", content="x = 2\n")
    assert ok["value"].startswith("modified src/app.py")
    assert target.read_text() == "x = 2\n"
    changed = [e for e in events if e["type"] == "file_changed"]
    assert changed[-1]["path"] == "src/app.py" and changed[-1]["kind"] == "modified"
    assert changed[-1]["bytes"] == 6 and changed[-1]["digest"].startswith("sha256:")
    assert "content" not in changed[-1]


async def test_write_creates_parents_keeps_mode_and_line_endings(
    workspace: Path, call: Call
) -> None:
    created = await call("write", path="pkg/deep/new.py", content="a\n")
    assert created["value"].startswith("created pkg/deep/new.py")
    script = workspace / "run.sh"
    script.write_bytes(b"#!/bin/sh\r\necho hi\r\n")
    os.chmod(script, 0o755)
    await call("read", path="run.sh")
    await call("write", path="run.sh", content="#!/bin/sh\necho bye\n")
    assert script.read_bytes() == b"#!/bin/sh\r\necho bye\r\n"
    assert os.stat(script).st_mode & 0o777 == 0o755
    leftovers = [p for p in workspace.rglob("*.prism-tmp")]
    assert leftovers == []


async def test_write_refuses_git_dir_and_escapes(
    workspace: Path, call: Call, tmp_path: Path
) -> None:
    (workspace / ".git").mkdir()
    result = await call("write", path=".git/config", content="[core]\n")
    assert result["value"]["code"] == "policy_denied"
    assert "inside .git/" in result["value"]["message"]
    assert not (workspace / ".git" / "config").exists()
    outside = tmp_path / "outside.txt"
    for path in (str(outside), "../outside.txt", "src/\0x", "a" * 300):
        refused = await call("write", path=path, content="pwned")
        assert refused["value"]["code"] == "policy_denied", path
    (workspace / "escape").symlink_to(tmp_path)
    refused = await call("write", path="escape/outside.txt", content="pwned")
    assert "outside the workspace roots" in refused["value"]["message"]
    assert not outside.exists()


async def test_default_policy_refuses_writes(workspace: Path) -> None:
    call = make_call(create_coding_tools(workspace, redactor=NOOP_REDACTOR))
    await call("read", path="src/app.py")
    result = await call("write", path="src/app.py", content="x")
    assert result["value"]["code"] == "policy_denied"
    assert "no approver is configured" in result["value"]["message"]
    assert (workspace / "src" / "app.py").read_text().startswith("def main")


async def test_edit_exactly_once_with_diff(workspace: Path, call: Call, events: list[Any]) -> None:
    await call("read", path="src/app.py")
    result = await call("edit", path="src/app.py", old_string="return 1", new_string="return 2")
    assert "-    return 1" in result["value"] and "+    return 2" in result["value"]
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 2\n"
    # the tool's own write refreshed the ledger: a second edit needs no re-read
    await call("edit", path="src/app.py", old_string="main", new_string="run")
    assert events[-1]["type"] == "file_changed"


async def test_edit_bad_inputs_change_nothing(workspace: Path, call: Call) -> None:
    target = workspace / "src" / "app.py"
    target.write_text("a = 1\nb = 1\nvalue = compute(1)\n")
    await call("read", path="src/app.py")
    before = target.read_text()
    empty = error_of(await call("edit", path="src/app.py", old_string="", new_string="x"))
    assert "old_string is empty" in empty
    multi = error_of(await call("edit", path="src/app.py", old_string="= 1", new_string="= 2"))
    assert "occurs 2 times" in multi and "lines 1, 2" in multi
    missing = error_of(
        await call("edit", path="src/app.py", old_string="value = compute(2)", new_string="v")
    )
    assert "not found" in missing and "nearest: line 3: value = compute(1)" in missing
    # all or nothing: the second edit fails, the first is not applied
    batch = await call(
        "edit",
        path="src/app.py",
        edits=[
            {"old_string": "a = 1", "new_string": "a = 9"},
            {"old_string": "zzz", "new_string": "q"},
        ],
    )
    assert "edit 2: old_string not found" in error_of(batch)
    assert target.read_text() == before
    both = await call(
        "edit", path="src/app.py", old_string="= 1", new_string="= 3", replace_all=True
    )
    assert not both.get("isError")
    assert target.read_text() == "a = 3\nb = 3\nvalue = compute(1)\n"


async def test_edit_after_delete_or_change(workspace: Path, call: Call) -> None:
    target = workspace / "src" / "app.py"
    await call("read", path="src/app.py")
    target.write_text("def main():\n    return 1\n# touched\n")
    assert "changed on disk" in error_of(
        await call("edit", path="src/app.py", old_string="return 1", new_string="return 2")
    )
    await call("read", path="src/app.py")
    target.unlink()
    assert "does not exist" in error_of(
        await call("edit", path="src/app.py", old_string="return 1", new_string="return 2")
    )
    assert not target.exists()


async def test_crlf_edit_keeps_crlf(workspace: Path, call: Call) -> None:
    target = workspace / "win.txt"
    target.write_bytes(b"one\r\ntwo\r\n")
    await call("read", path="win.txt")
    await call("edit", path="win.txt", old_string="one\ntwo", new_string="1\n2")
    assert target.read_bytes() == b"1\r\n2\r\n"


async def test_limits_are_configurable(workspace: Path) -> None:
    policy = create_execution_policy([workspace], [allow_kinds("write")], redactor=NOOP_REDACTOR)
    toolset = create_coding_tools(
        workspace,
        execution_policy=policy,
        limits=CodingLimits(max_file_bytes=10),
        redactor=NOOP_REDACTOR,
    )
    call = make_call(toolset)
    assert "over the 10 bytes limit" in error_of(await call("read", path="src/app.py"))


async def test_hard_link_and_symlink_reads_are_refused(
    workspace: Path, call: Call, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    os.link(secret, workspace / "innocent.txt")
    (workspace / "alias.txt").symlink_to(secret)
    for path in ("innocent.txt", "alias.txt", f"/proc/self/root{secret}"):
        result = await call("read", path=path)
        assert result["value"]["code"] == "policy_denied", path
        assert "top secret" not in str(result)
