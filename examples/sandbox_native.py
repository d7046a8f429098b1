"""A native sandbox (bubblewrap): commands, a limit, a process, egress.

Needs Linux with bubblewrap (``apt-get install bubblewrap``); see
docs/sandboxes.md. The allow-listed server runs on the host's loopback and
is reached only through the host's egress proxy.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio

from prism.sandbox import SandboxLimits, create_egress_policy, create_native_sandbox
from prism.sandbox.filesystem import create_sandbox_filesystem_operations

FETCH = (
    "import sys, urllib.request\n"
    "try: print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())\n"
    "except Exception as e: print('blocked:', getattr(e, 'code', e))\n"
)


class Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: Any) -> None:
        pass


async def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    policy = create_egress_policy([{"host": "127.0.0.1", "port": port, "protocol": "http"}])
    decisions: list[dict[str, Any]] = []
    limits = SandboxLimits(max_processes=64, timeout=20)
    async with await create_native_sandbox(
        limits=limits, egress=policy, on_event=decisions.append
    ) as sandbox:
        caps = sandbox.capabilities
        print("backend:", caps.backend, "| filesystem isolated:", caps.filesystem_isolated)
        result = await sandbox.exec_file("id", ["-u"])
        print("runs as root:", result.stdout_text.strip() == "0")
        shadow = await sandbox.exec("cat /etc/shadow")
        print("host /etc/shadow readable:", shadow.exit_code == 0)

        fs = create_sandbox_filesystem_operations(sandbox)
        await fs.write_file("notes/todo.txt", "ship it\n")
        print("file in the workspace:", (await fs.read_file("notes/todo.txt")).decode().strip())

        forever = await sandbox.exec("sleep 1000", timeout=0.5)
        print("a command that never ends hit:", forever.limit)

        doubler = "import sys\nfor line in sys.stdin: print(2 * int(line), flush=True)"
        process = await sandbox.start_process("/usr/bin/python3", ["-c", doubler])
        await process.write("21\n", close=True)
        await process.wait(10)
        print("process output:", (await process.read()).text.strip())

        allowed = await sandbox.exec_file(
            "/usr/bin/python3", ["-c", FETCH, f"http://127.0.0.1:{port}/"]
        )
        print("allow-listed server:", allowed.stdout_text.strip())
        other = await sandbox.exec_file("/usr/bin/python3", ["-c", FETCH, "http://127.0.0.1:9/"])
        print("anything else:", other.stdout_text.strip())
        print("egress decisions:", [d["decision"] for d in decisions])
    server.shutdown()


if __name__ == "__main__":
    anyio.run(main)
