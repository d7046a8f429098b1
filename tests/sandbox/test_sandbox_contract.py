"""The pure parts: capabilities, limits, refs, limit naming, egress policy, tar checks."""

from __future__ import annotations

import dataclasses
import io
import signal
import tarfile

import pytest

from prism.sandbox import (
    ERR_PROCESS_ATTACH,
    ERR_SANDBOX_TAR_ENTRY,
    EgressRule,
    SandboxCapabilities,
    SandboxError,
    SandboxLimits,
    create_egress_policy,
)
from prism.sandbox.base import classify_limit
from prism.sandbox.docker import DOCKER_CAPABILITIES
from prism.sandbox.native import BWRAP_CAPABILITIES, NETNS_CAPABILITIES
from prism.sandbox.processes import ProcessRef
from prism.sandbox.tar import build_tar, read_tar_entries


def test_capabilities_are_frozen_and_truthful_per_backend() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        BWRAP_CAPABILITIES.filesystem_isolated = False  # type: ignore[misc]
    assert BWRAP_CAPABILITIES.containment_claim and DOCKER_CAPABILITIES.containment_claim
    assert not NETNS_CAPABILITIES.containment_claim
    assert NETNS_CAPABILITIES.network_isolated and not NETNS_CAPABILITIES.filesystem_isolated
    assert DOCKER_CAPABILITIES.reattach and not BWRAP_CAPABILITIES.reattach
    assert DOCKER_CAPABILITIES.to_json()["containmentClaim"] is True


def test_containment_claim_is_the_conservative_projection() -> None:
    base = dict(
        backend="x",
        workspace_coherent=True,
        filesystem_isolated=True,
        network_isolated=True,
        process_isolated=True,
        privilege_isolated=False,
        egress_restricted=False,
    )
    assert SandboxCapabilities(**base).containment_claim  # type: ignore[arg-type]
    for name in (
        "workspace_coherent",
        "filesystem_isolated",
        "network_isolated",
        "process_isolated",
    ):
        assert not SandboxCapabilities(**{**base, name: False}).containment_claim  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["memory_bytes", "timeout", "max_processes"])
@pytest.mark.parametrize("value", [0, -1, True, "1"])
def test_bad_limits_fail_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(SandboxError, match=f"SandboxLimits.{field}"):
        SandboxLimits(**{field: value})  # type: ignore[arg-type]


def test_process_refs_round_trip_and_refuse_garbage() -> None:
    ref = ProcessRef("docker", "abc", "/workspace", "p1-00", "f" * 64)
    assert ProcessRef.decode(ref.encode()) == ref
    for bad in ("", "prism-proc:", "prism-proc:!!!", "other:abc", ref.encode()[:-4]):
        with pytest.raises(SandboxError) as caught:
            ProcessRef.decode(bad)
        assert caught.value.code == ERR_PROCESS_ATTACH


def test_limits_are_named_from_what_the_kernel_reports() -> None:
    assert classify_limit({"limit": "timeout"}, b"") == "timeout"
    assert classify_limit({"limit": "timeout"}, b"sh: Cannot fork\n") == "processes"
    assert classify_limit({"signal": signal.SIGXCPU}, b"") == "cpu_time"
    assert classify_limit({"signal": signal.SIGXFSZ}, b"") == "file_size"
    assert classify_limit({"signal": signal.SIGKILL}, b"", killed_by_oom=True) == "memory"
    assert classify_limit({"exitCode": 1}, b"MemoryError\n") == "memory"
    assert classify_limit({"exitCode": 1, "diskFull": True}, b"I/O error") == "disk"
    assert classify_limit({"exitCode": 0, "stdoutTruncated": True}, b"") == "output"
    assert classify_limit({"exitCode": 2}, b"plain failure") is None


def test_egress_policy_is_exact_deny_all_with_a_stable_fingerprint() -> None:
    empty = create_egress_policy()
    assert not empty.allows("127.0.0.1", 80, "http")
    a = create_egress_policy(
        [{"host": "127.0.0.1", "port": 8080, "protocol": "http"}], presets=["pypi"]
    )
    b = create_egress_policy([EgressRule("127.0.0.1", 8080, "http")], presets=["pypi", "pypi"])
    assert a == b and a.fingerprint == b.fingerprint and len(a.fingerprint) == 64
    assert a.allows("pypi.org", 443, "https") and a.allows("PyPI.org", 443, "https")
    assert not a.allows("pypi.org", 80, "http") and not a.allows("127.0.0.1", 8081, "http")
    assert not a.allows("127.0.0.1", 8080, "https")
    assert a.fingerprint != empty.fingerprint


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"host": "*.example.com", "port": 443, "protocol": "https"}, "exact"),
        ({"host": "x.org", "port": 0, "protocol": "https"}, "port"),
        ({"host": "x.org", "port": 443, "protocol": "ftp"}, "protocol"),
        ({"host": "x.org", "port": 443}, "exactly host, port and protocol"),
    ],
)
def test_bad_egress_rules_fail_clearly(rule: dict[str, object], message: str) -> None:
    with pytest.raises(SandboxError, match=message):
        create_egress_policy([rule])
    with pytest.raises(SandboxError, match="unknown egress preset"):
        create_egress_policy(presets=["everything"])


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            archive.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, **fields: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in fields.items():
        setattr(info, key, value)
    return info


@pytest.mark.parametrize(
    ("member", "why"),
    [
        (_member("../escape"), "'..'"),
        (_member("/etc/passwd"), "absolute"),
        (_member("a/../../x"), "'..'"),
        (_member("link", tarfile.SYMTYPE, linkname="/etc/shadow"), "symlink"),
        (_member("hard", tarfile.LNKTYPE, linkname="x"), "hard link"),
        (_member("sda", tarfile.BLKTYPE, devmajor=8), "device node"),
        (_member("fifo", tarfile.FIFOTYPE), "fifo"),
        (_member("suid", mode=0o4755), "setuid"),
    ],
)
def test_hostile_tar_entries_are_refused(member: tarfile.TarInfo, why: str) -> None:
    data = _tar((_member("ok.txt"), b"fine"), (member, b"x"))
    with pytest.raises(SandboxError, match=why) as caught:
        read_tar_entries(data, max_bytes=1 << 20)
    assert caught.value.code == ERR_SANDBOX_TAR_ENTRY


def test_tar_bounds_and_identity() -> None:
    data = _tar((_member("d", tarfile.DIRTYPE, mode=0o755), b""), (_member("d/a"), b"12345"))
    entries, identity = read_tar_entries(data, max_bytes=1 << 20)
    assert identity.entries == 2 and identity.bytes == 5 and len(identity.sha256) == 64
    with pytest.raises(SandboxError, match="more than 4 bytes"):
        read_tar_entries(data, max_bytes=4)
    _, again = build_tar(entries, max_bytes=1 << 20)
    assert build_tar(entries, max_bytes=1 << 20)[1] == again  # deterministic
    with pytest.raises(SandboxError, match=r"'\.\.'"):
        build_tar([{"path": "../x", "type": "file", "mode": 0o644, "data": ""}], max_bytes=10)
