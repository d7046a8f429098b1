"""Tools from typed functions: the schema comes from type hints, the
description from the docstring, and a bad call goes back to the model as a
tool error while the run goes on. Runs without a network (mock provider)."""

from __future__ import annotations

import json
from typing import Literal

import anyio
from pydantic import BaseModel

from prism import ToolContext, create_mock_provider, define_tool, tool
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent


class Parcel(BaseModel):
    weight_kg: float
    speed: Literal["standard", "express"] = "standard"


@tool
def quote(parcel: Parcel, destination: str, ctx: ToolContext) -> dict[str, object]:
    """Price a parcel.

    Args:
        parcel: What is being sent.
        destination: City it goes to.
    """
    rate = 9.0 if parcel.speed == "express" else 4.0
    return {"price": round(rate * parcel.weight_kg, 2), "to": destination, "call": ctx.tool_call_id}


def cities(country: str) -> list[str]:
    """Cities we ship to in a country."""
    return ["Oslo", "Bergen"] if country == "NO" else []


async def main() -> None:
    provider = create_mock_provider(
        [
            # A wrong type: the model gets an invalid_arguments error and retries.
            [
                provider_tool_call(
                    "c1", "quote", {"parcel": {"weight_kg": "heavy"}, "destination": "Oslo"}
                ),
                provider_done("tool_use"),
            ],
            [
                provider_tool_call(
                    "c2",
                    "quote",
                    {"parcel": {"weight_kg": 2, "speed": "express"}, "destination": "Oslo"},
                ),
                provider_done("tool_use"),
            ],
            [provider_text_delta("18 to Oslo."), provider_done("stop")],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=provider,
        tools=[quote, define_tool(cities)],
    )
    session = agent.create_session("typed-tools")
    result = await session.run("How much for 2 kg express to Oslo?")
    for declared in provider.requests[0]["tools"]:
        print("declared:", declared["name"], "-", declared["description"])
    print("quote schema requires:", provider.requests[0]["tools"][0]["parameters"]["required"])
    for entry in await session.entries():
        for part in entry["message"]["content"]:
            if part.get("type") == "tool_result":
                print(
                    part["toolCallId"],
                    "error" if part.get("isError") else "ok",
                    json.dumps(part["result"]),
                )
    print("answer:", result.text)


anyio.run(main)
