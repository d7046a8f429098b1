"""The Docker sandbox image, built locally and never pulled.

A root filesystem of static busybox (the shell and tools), the host's Debian
``python3`` with the shared libraries it and its extension modules link
(the agent's interpreter) and the agent itself; imported with ``docker
import``. The tag is a SHA-256 of every file's path, mode and content, so an
unchanged rootfs is imported once per engine and any change builds a new tag.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from prism.sandbox.contract import SandboxUnavailableError

AGENT_SOURCE = Path(__file__).with_name("_agent.py")
IMAGE_REPOSITORY = "prism-sandbox"
SANDBOX_UID = 1000
PYTHON = "/usr/bin/python3"
_STDLIB_SKIP = {
    "test", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip", "pydoc_data",
    "dist-packages", "site-packages", "distutils", "unittest", "__phello__",
}  # fmt: skip
_LDD_PATH = re.compile(r"(/\S+)")


def _busybox() -> Path:
    found = shutil.which("busybox")
    if found is None:
        raise SandboxUnavailableError(
            "the Docker sandbox image needs busybox (apt-get install busybox-static)"
        )
    return Path(found)


def _shared_libraries(binaries: list[Path]) -> set[Path]:
    libraries: set[Path] = set()
    for chunk in range(0, len(binaries), 200):
        done = subprocess.run(
            ["ldd", *map(str, binaries[chunk : chunk + 200])],
            capture_output=True,
            text=True,
            check=False,
        )
        for line in done.stdout.splitlines():
            match = _LDD_PATH.search(line.split("=>")[-1])
            if match and Path(match.group(1)).exists():
                libraries.add(Path(match.group(1)))
    return libraries


def _python_files() -> tuple[Path, list[Path], list[Path]]:
    """The interpreter, its standard library files, and the ELF files to ldd."""
    python = Path(PYTHON).resolve()
    if not python.exists():
        raise SandboxUnavailableError(
            f"the Docker sandbox image copies the agent's interpreter from {PYTHON} "
            "(apt-get install python3)"
        )
    version = re.sub(r"[^0-9.]", "", python.name) or "3"
    stdlib = Path(f"/usr/lib/python{version}")
    files: list[Path] = []
    for current, dirs, names in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in _STDLIB_SKIP and not d.startswith("config-"))
        # The .pyc files too: the image's root is read-only, so without them
        # every agent start would compile its imports again (~0.5 s).
        files += [Path(current) / n for n in sorted(names) if not n.endswith(".exe")]
    elves = [python, *[f for f in files if f.suffix == ".so"]]
    return python, files, elves


def _rootfs_entries() -> Iterator[tuple[str, bytes | None, int, str | None]]:
    """(path, content or None for a directory, mode, symlink target). Files
    copied from the host keep their mtime (see :func:`build_rootfs`)."""
    for directory in ("bin", "etc", "tmp", "workspace", "source", "prism-control", "proc",
                      "dev", "sys", "opt", "opt/prism", "usr", "usr/bin"):  # fmt: skip
        yield directory, None, 0o1777 if directory == "tmp" else 0o755, None
    busybox = _busybox()
    yield "bin/busybox", busybox.read_bytes(), 0o755, None
    applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True)
    for applet in sorted(set(applets.stdout.split()) - {"busybox"}):
        yield f"bin/{applet}", b"", 0o777, "busybox"
    python, stdlib, elves = _python_files()
    yield "usr/bin/python3", python.read_bytes(), 0o755, None
    libraries = sorted(_shared_libraries(elves))
    for path in [*stdlib, *libraries]:
        mode = 0o755 if path.suffix == ".so" or ".so." in path.name else 0o644
        yield str(path.resolve()).lstrip("/"), path.read_bytes(), mode, None
    for path in libraries:
        # The loader is asked for by its link name (/lib64/ld-linux-x86-64.so.2).
        linked = Path(os.path.realpath(path.parent)) / path.name
        if linked.is_symlink():
            yield str(linked).lstrip("/"), b"", 0o777, os.readlink(linked)
    for name in ("lib", "lib64"):
        host = Path("/") / name
        if host.is_symlink():
            yield name, b"", 0o777, os.readlink(host)
    yield "opt/prism/agent.py", AGENT_SOURCE.read_bytes(), 0o644, None
    passwd = f"root:x:0:0:root:/root:/bin/sh\nsandbox:x:{SANDBOX_UID}:{SANDBOX_UID}::/workspace:/bin/sh\n"
    yield "etc/passwd", passwd.encode(), 0o644, None
    yield "etc/group", f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\n".encode(), 0o644, None


def _host_mtime(path: str) -> int:
    """A .pyc is only used if its source's mtime matches the one it records."""
    try:
        return int(os.stat("/" + path).st_mtime) if path.startswith("usr/lib/python") else 0
    except OSError:
        return 0


def build_rootfs(target: Path) -> str:
    """Write the rootfs tar to ``target``; return its content tag."""
    digest = hashlib.sha256()
    seen: set[str] = set()
    with tarfile.open(target, "w") as archive:
        for path, content, mode, link in _rootfs_entries():
            if path in seen:
                continue
            seen.add(path)
            info = tarfile.TarInfo(path)
            info.mode = mode
            info.mtime = _host_mtime(path)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                archive.addfile(info)
            elif content is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.size = len(content)
                archive.addfile(info, io.BytesIO(content))
            digest.update(f"{path}\0{mode}\0{link}\0{info.mtime}\0".encode())
            digest.update(hashlib.sha256(content or b"").digest())
    return digest.hexdigest()[:20]


def ensure_sandbox_image(docker: list[str], env: dict[str, str]) -> str:
    """The local sandbox image's tag, importing it if this engine lacks it."""
    with tempfile.TemporaryDirectory(prefix="prism-image-") as scratch:
        rootfs = Path(scratch) / "rootfs.tar"
        tag = f"{IMAGE_REPOSITORY}:{build_rootfs(rootfs)}"
        probe = subprocess.run(
            [*docker, "image", "inspect", "--format", "{{.Id}}", tag],
            capture_output=True,
            env=env,
            check=False,
        )
        if probe.returncode == 0:
            return tag
        with rootfs.open("rb") as handle:
            done = subprocess.run(
                [*docker, "import", "-", tag],
                stdin=handle,
                capture_output=True,
                env=env,
                check=False,
            )
        if done.returncode != 0:
            raise SandboxUnavailableError(
                f"docker import of the sandbox image failed: {done.stderr.decode(errors='replace').strip()}"
            )
    return tag
