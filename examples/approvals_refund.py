"""Approvals: a refund that needs a human pauses the run; a second process
resumes it with the decision.

The script starts itself as a child process that runs a durable support
session on a JSONL file. The model asks for a refund (which needs approval)
and an order lookup in one round: the lookup runs, the refund waits, and the
run ends paused with the pending approval. A second child process, holding
only the store, approves it: the refund runs exactly once and the model
finishes. Resuming with the same decision again is refused.

Run: .venv/bin/python examples/approvals_refund.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from prism import create_agent, create_jsonl_session_store, create_mock_provider, define_tool
from prism.approvals import ApprovalDecision, ApprovalDecisionError, requires_approval
from prism.providers import provider_done, provider_text_delta, provider_tool_call


def script(request: Any) -> list[Any]:
    """The model: refund and look up the order, then report what happened."""
    turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turn == 0:
        return [
            provider_tool_call("call_refund", "refund", {"order": "A-17", "cents": 1250}),
            provider_tool_call("call_lookup", "lookup_order", {"order": "A-17"}),
            provider_done(),
        ]
    last = request["messages"][-1]["content"][-1]
    return [provider_text_delta(f"Refund: {last['result']}."), provider_done()]


def make_agent(path: Path, ledger: Path) -> Any:
    def refund(args: dict[str, Any], ctx: Any) -> str:
        with ledger.open("a") as handle:
            handle.write(f"refunded {args['cents']}\n")
        return f"refunded {args['cents']} cents"

    def lookup_order(args: dict[str, Any], ctx: Any) -> str:
        return "paid"

    return create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=create_mock_provider(script),
        tools=[
            # Every refund waits for a human (use when=... for only some).
            requires_approval(define_tool("refund", refund), reason="refunds need a human"),
            define_tool("lookup_order", lookup_order, idempotent=True),
        ],
        store=create_jsonl_session_store(path),
        durable=True,  # the pause is a durable checkpoint
    )


def start(path: Path, ledger: Path) -> None:
    session = make_agent(path, ledger).create_session("ticket-17")
    result = session.run_sync("Refund order A-17")
    # A web app would store these and show them to a person.
    print(json.dumps(result.pending_approvals))


def decide(path: Path, ledger: Path, approval_id: str) -> None:
    session = make_agent(path, ledger).create_session("ticket-17")
    result = session.resume_sync(decisions={approval_id: ApprovalDecision.approve()})
    assert result is not None
    print("resumed:", result.text)
    try:
        session.resume_sync(decisions={approval_id: ApprovalDecision.approve()})
    except ApprovalDecisionError as error:
        print("again:", error.code)


def child(*args: str) -> str:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def main() -> None:
    if len(sys.argv) > 1:
        path, ledger = Path(sys.argv[2]), Path(sys.argv[3])
        if sys.argv[1] == "start":
            start(path, ledger)
        else:
            decide(path, ledger, sys.argv[4])
        return
    with tempfile.TemporaryDirectory() as tmp:
        path, ledger = Path(tmp) / "sessions.jsonl", Path(tmp) / "ledger.txt"
        (pending,) = json.loads(child("start", str(path), str(ledger)))
        print("paused on:", pending["tool"], pending["arguments"], "-", pending["reason"])
        print("refunds before approval:", ledger.exists())
        print(child("decide", str(path), str(ledger), pending["id"]).strip())
        print("refunds:", len(ledger.read_text().splitlines()))


if __name__ == "__main__":
    main()
