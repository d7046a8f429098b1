"""The inspector's pieces from Python: a durable run with a tool, then its
costs and timeline read back from the store, an HTML report written, and the
server started on loopback and asked for its sessions (with the token).
Mock provider, no network beyond 127.0.0.1. See docs/inspect.md."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import httpx

from prism import create_jsonl_session_store, create_mock_provider, define_tool
from prism.inspect import InspectorAddress, SessionView, export_html, open_source, serve_inspector
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR


async def record(path: Path) -> None:
    provider = create_mock_provider(
        [
            [provider_tool_call("c1", "weather", {"city": "Lisbon"}), provider_done()],
            [provider_text_delta("Sunny, 24 °C."), provider_done()],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=provider,
        tools=[define_tool("weather", lambda args, ctx: {"sky": "sunny", "celsius": 24})],
        store=create_jsonl_session_store(path),
        durable=True,
    )
    await agent.create_session("weather").run("Weather in Lisbon?")


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "sessions.jsonl"
        await record(path)

        source = await open_source(str(path))
        view = SessionView("weather", await source.entries("weather"))
        totals = view.costs.totals()
        print("turns:", totals["requests"], "busts:", totals["cacheBusts"])
        print("steps:", [step.kind for step in view.timeline])

        report = Path(directory) / "report.html"
        await export_html(source, "weather", str(report), redactor=NOOP_REDACTOR)
        print("report is self-contained:", "<script src=" not in report.read_text())
        await source.aclose()

        ready: list[InspectorAddress] = []
        async with anyio.create_task_group() as tasks:
            started = anyio.Event()

            def on_ready(address: InspectorAddress) -> None:
                ready.append(address)
                started.set()

            tasks.start_soon(
                lambda: serve_inspector(str(path), on_ready=on_ready, redactor=NOOP_REDACTOR)
            )
            await started.wait()
            address = ready[0]
            async with httpx.AsyncClient() as client:
                base = f"http://127.0.0.1:{address.port}/api/sessions"
                refused = await client.get(base)
                sessions = await client.get(base, params={"token": address.token})
            print("without the token:", refused.status_code)
            print("sessions:", [s["id"] for s in sessions.json()["sessions"]])
            tasks.cancel_scope.cancel()


anyio.run(main)
