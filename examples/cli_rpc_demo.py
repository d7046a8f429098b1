"""Drive ``prism --mode rpc`` from another program, the way a non-Python
client would: write one JSON request per line, read responses and events.

Run it with the venv's python (the ``prism`` script is found next to it):

    .venv/bin/python examples/cli_rpc_demo.py

It uses a throwaway PRISM_HOME, so no session file is left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


class Prism:
    def __init__(self, *args: str, env: dict[str, str]) -> None:
        exe = Path(sys.executable).parent / "prism"
        self.proc = subprocess.Popen(
            [str(exe), "--mode", "rpc", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def send(self, *requests: dict[str, Any]) -> None:
        """Several requests in one write are still one line each."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("prism exited")
        message: dict[str, Any] = json.loads(line)
        return message

    def response(self, request_id: str) -> dict[str, Any]:
        """Read until the response for ``request_id``, echoing text deltas."""
        while True:
            message = self.read()
            if message.get("type") == "event":
                event = message["event"]
                if event["type"] == "message_delta" and event["delta"]["type"] == "text":
                    print(f"  delta[{message['id']}]: {event['delta']['text']!r}")
                continue
            if message.get("id") == request_id:
                return message

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # EOF: prism lets active runs finish, then exits 0
        return self.proc.wait(timeout=60)


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "PRISM_HOME": home}
        prism = Prism("--session", "demo", "--mock-delay-ms", "20", env=env)

        prism.send({"id": "1", "command": "prompt", "params": {"input": "Hello"}})
        print("reply 1:", prism.response("1")["result"]["text"])

        prism.send({"id": "2", "command": "prompt", "params": {"input": "Tell me more"}})
        print("reply 2:", prism.response("2")["result"]["text"])

        # abort answers at once; the prompt it cancelled then answers ok:false
        prism.send(
            {"id": "3", "command": "prompt", "params": {"input": "A very long story"}},
            {"id": "stop", "command": "abort", "params": {"reason": "changed my mind"}},
        )
        print("abort:", prism.response("stop")["result"])
        print("prompt 3:", prism.response("3")["error"]["message"])

        prism.send({"id": "4", "command": "delete-everything"})
        print("refused:", prism.response("4")["error"]["message"])

        prism.send({"id": "5", "command": "state"})
        state = prism.response("5")["result"]
        print(f"state: session={state['sessionId']} messages={state['messageCount']}")

        print("exit code:", prism.close())
        print("session file lines:", len((Path(home) / "sessions.jsonl").read_bytes().splitlines()))


if __name__ == "__main__":
    main()
