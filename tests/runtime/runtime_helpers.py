"""Shared helpers for the runtime tests (unique module name on purpose)."""

from __future__ import annotations

from typing import Any

from prism.providers import create_mock_provider
from prism.runtime import Agent, AgentSession, create_agent
from prism.tools import define_tool

MODEL = {"provider": "mock", "model": "demo"}


def echo_tool(name: str = "echo", **kwargs: Any) -> Any:
    return define_tool(name, lambda args, ctx: {"echo": args}, **kwargs)


def make_agent(script: Any, **options: Any) -> Agent:
    provider = options.pop("provider", None) or create_mock_provider(script)
    options.setdefault("tools", [echo_tool()])
    return create_agent(model=MODEL, provider=provider, **options)


def record(session: AgentSession) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    session.subscribe(events.append)
    return events


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """Event types, with the delta type / tool name folded in for readability."""
    out: list[str] = []
    for event in events:
        kind = event["type"]
        if kind == "message_delta":
            kind += ":" + event["delta"]["type"]
        elif kind == "tool_call":
            kind += ":" + event["toolCall"]["name"]
        elif kind == "tool_result":
            kind += ":" + event["result"]["name"] + ("!" if event["result"].get("isError") else "")
        out.append(kind)
    return out


def roles(messages: list[Any]) -> list[str]:
    return [m["role"] for m in messages]


async def stored_roles(session: AgentSession) -> list[str]:
    return [e["message"]["role"] for e in await session.entries() if e["kind"] == "message"]
