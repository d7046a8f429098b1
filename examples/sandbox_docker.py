"""A Docker sandbox: a disposable container on a locally built image.

Talks to the engine in ``DOCKER_HOST`` (the example test starts a private
dockerd; see docs/sandboxes.md). The image is imported on first use, never
pulled. Shows the workspace tar round trip and a process re-attached by its
ref, as a resumed host would.
"""

from __future__ import annotations

import io
import tarfile

import anyio

from prism.sandbox.docker import attach_docker_sandbox, create_docker_sandbox


def workspace_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        data = b"print('hello from the container')\n"
        info = tarfile.TarInfo("app.py")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


async def main() -> None:
    sandbox = await create_docker_sandbox()
    try:
        print(
            "backend:", sandbox.capabilities.backend, "| re-attach:", sandbox.capabilities.reattach
        )
        identity = await sandbox.import_tar(workspace_tar())
        print("imported entries:", identity.entries)
        print((await sandbox.exec_file("python3", ["app.py"])).stdout_text.strip())
        print("writes to /etc:", (await sandbox.exec("echo x > /etc/x")).stderr_text.strip())
        bomb = await sandbox.exec("f(){ f | f & }; f", timeout=10)
        print("fork bomb hit:", bomb.limit)

        watcher = await sandbox.start_process("sh", ["-c", "while read l; do echo seen $l; done"])
        await watcher.write("one\n")
        ref, container = watcher.ref, sandbox.container_id
        await sandbox.detach()  # as if this host restarted: the container lives on

        sandbox = await attach_docker_sandbox(container)
        again = await sandbox.attach_process(ref)
        await again.write("two\n", close=True)
        await again.wait(10)
        print("re-attached output:", (await again.read()).text.split("\n")[:2])
        _, exported = await sandbox.export_tar()
        print("exported entries:", exported.entries, "sha256:", len(exported.sha256) == 64)
    finally:
        await sandbox.close()


if __name__ == "__main__":
    anyio.run(main)
