"""Sessions written by the real runtime (mock provider, real stores) for the
inspector's tests, its screenshots and its benchmark."""

from __future__ import annotations

import base64
from typing import Any

from prism import create_mock_provider, define_tool
from prism.attention import CALIBRATION_ENTRY, TokenCalibration, split_request_tokens
from prism.providers import (
    provider_done,
    provider_text_delta,
    provider_thinking_delta,
    provider_tool_call,
    provider_usage,
)
from prism.runtime import create_agent
from prism.stores import SessionStore

# A 1x1 PNG, so the message view has an image to show.
PIXEL_PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a5d1c2c4"
        "0000000049454e44ae426082"
    )
).decode()
SECRET = "sk-demo-secret-9f8e7d6c"


def _say(text: str, thinking: str | None = None) -> list[Any]:
    events: list[Any] = [provider_thinking_delta(thinking)] if thinking else []
    return [*events, provider_text_delta(text), provider_done()]


def _call(call_id: str, name: str, args: dict[str, Any], thinking: str | None = None) -> list[Any]:
    events: list[Any] = [provider_thinking_delta(thinking)] if thinking else []
    return [*events, provider_tool_call(call_id, name, args), provider_done()]


async def build_demo_session(
    store: SessionStore, session_id: str = "trip-planning"
) -> dict[str, str]:
    """A durable session with tool calls, thinking, markdown, an image, a
    label, a compaction, a fork, memory records, a gate trip and a failed
    tool. Returns ids the tests look for."""
    provider = create_mock_provider(
        [
            _call("c1", "search_flights", {"to": "Lisbon"}, thinking="Search flights first."),
            _say(
                "## Lisbon plan\n\n- **Fly** on Friday\n- Stay in *Alfama*\n\n```\nbudget: 2000 EUR\n```",
                thinking="Summarize.",
            ),
            _say("Porto instead: trains leave hourly."),
            _say("Here is the map you sent: a very small picture."),
            _call("c2", "convert_currency", {"amount": 2000, "to": "USD"}),
            _say("That is about 2,170 USD."),
            _call("c3", "book_hotel", {"name": "Alfama Inn"}),
            _say("Booking failed; try another date."),
        ]
    )

    def fail_booking(args: dict[str, Any], ctx: Any) -> Any:
        raise RuntimeError("no rooms left on that date")

    agent = create_agent(
        model={"provider": "mock", "model": "demo"},
        provider=provider,
        store=store,
        durable=True,
        tools=[
            define_tool(
                "search_flights", lambda a, c: {"flights": ["TP1350 09:05", "FR8354 13:40"]}
            ),
            define_tool("convert_currency", lambda a, c: {"usd": 2170}),
            define_tool("book_hotel", fail_booking),
        ],
        secrets=[SECRET],
    )
    session = agent.create_session(session_id)
    await session.run(f"Plan a trip to Lisbon. My key is {SECRET}, keep it safe.")
    fork_point = session.leaf_id
    assert fork_point is not None
    await session.run("What about Porto instead?")
    await session.navigate(fork_point)
    await session.set_model({"provider": "mock", "model": "demo", "limits": {"contextWindow": 400}})
    await session.run(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Here is the map."},
                {"type": "image", "data": PIXEL_PNG, "mimeType": "image/png"},
            ],
        }
    )
    first_user = (await session.branch_entries())[0]["id"]
    await session.add_label("plan-v1")
    await session.append_custom(
        "om.observations.recorded",
        {
            "type": "om.observations.recorded",
            "observations": [
                {
                    "id": "3f9c0a1b2c4d",
                    "content": "Budget is 2000 EUR.",
                    "sourceEntryIds": [first_user],
                }
            ],
            "coversUpToId": first_user,
        },
    )
    compaction = await session.compact()
    await session.run("Convert the budget to USD.")
    await session.append_custom("prism.attention_frontier", {"thinking": [], "toolCallIds": ["c2"]})
    await session.run("Book the hotel.")
    return {"fork_point": fork_point, "first_user": first_user, "compaction": compaction["id"]}


async def build_plain_session(
    store: SessionStore, session_id: str = "plain"
) -> list[dict[str, Any]]:
    """A session without system prompt, tools or attention compiler (so the
    inspector sees every request whole): five runs with a compaction in the
    middle. Returns the provider requests as sent, for the benchmark's scorer."""
    provider = create_mock_provider(
        [_say(f"Answer number {n}: " + "details " * (20 * n)) for n in range(1, 6)]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "plain"}, provider=provider, store=store
    )
    session = agent.create_session(session_id)
    for n in range(1, 4):
        await session.run(f"Question {n}: " + "context " * (30 * n))
    await session.compact()
    for n in range(4, 6):
        await session.run(f"Question {n}: " + "context " * (10 * n))
    return [dict(r) for r in provider.requests]


async def build_calibrated_session(store: SessionStore, session_id: str = "calibrated") -> None:
    """Four runs of an agent with ``token_calibration=`` whose provider bills
    twice Prism's plain estimate, and one damaged calibration record."""

    def bill(request: dict[str, Any]) -> list[Any]:
        reported = round(split_request_tokens(request).total * 2.0)
        return [
            provider_text_delta("noted"),
            provider_usage(input_tokens=reported, output_tokens=3),
            provider_done(),
        ]

    agent = create_agent(
        model={"provider": "mock", "model": "billed"},
        provider=create_mock_provider(bill),
        store=store,
        token_calibration=TokenCalibration(),
    )
    session = agent.create_session(session_id)
    await session.append_custom(CALIBRATION_ENTRY, {"version": 7})
    for n in range(4):
        await session.run(f"Note {n}: " + "plain words of prose " * 40)
