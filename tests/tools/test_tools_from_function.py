"""Tools built from typed functions: schema from hints, description from the
docstring, validated keyword arguments, and errors that reach the model."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import uuid
from typing import Any, Literal

import pytest
from pydantic import BaseModel, field_validator
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from prism import ConfigError, ToolContext, create_mock_provider, define_tool, tool
from prism.providers import provider_done, provider_text_delta, provider_tool_call
from prism.runtime import create_agent
from prism.security import NOOP_REDACTOR
from prism.tools import INVALID_ARGUMENTS, create_tool_registry, dispatch_tool_call


class Address(BaseModel):
    city: str
    zip_code: str

    @field_validator("zip_code")
    @classmethod
    def five_digits(cls, value: str) -> str:
        if not (len(value) == 5 and value.isdigit()):
            raise ValueError("zip_code must be five digits")
        return value


@dataclasses.dataclass
class Window:
    start: int
    end: int = 10


class Filters(TypedDict):
    tag: str
    limit: int


class Handle:
    """A plain class: pydantic has no schema for it."""


def call(name: str, arguments: dict[str, Any], call_id: str = "c1") -> Any:
    return {"id": call_id, "name": name, "arguments": arguments}


def test_schema_and_description_come_from_hints_and_docstring() -> None:
    @tool
    def search(
        query: str,
        mode: Literal["fast", "exact"] = "fast",
        limit: int | None = None,
        window: Window | None = None,
        filters: Filters | None = None,
    ) -> list[str]:
        """Search the catalogue.

        Slower for exact mode.

        Args:
            query: What to look for.
            mode: How hard to look,
                fast or exact.
            limit (int): At most this many.
        """
        return [query]

    assert search.name == "search"
    assert search.description == "Search the catalogue."
    schema = dict(search.parameters or {})
    assert schema["type"] == "object" and schema["required"] == ["query"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["query"]["type"] == "string"
    assert props["query"]["description"] == "What to look for."
    assert props["mode"]["enum"] == ["fast", "exact"] and props["mode"]["default"] == "fast"
    assert props["mode"]["description"] == "How hard to look, fast or exact."
    assert props["limit"]["description"] == "At most this many."
    assert {"Window", "Filters"} <= set(schema["$defs"])
    assert schema["$defs"]["Window"]["required"] == ["start"]
    assert set(schema["$defs"]["Filters"]["required"]) == {"tag", "limit"}


@pytest.mark.anyio
async def test_typed_tool_gets_validated_values_and_the_context() -> None:
    seen: list[Any] = []

    @tool(name="ship", description="Ship a parcel.")
    async def ship_parcel(address: Address, window: Window, ctx: ToolContext) -> Address:
        seen.append((address, window, ctx.tool_call_id))
        return address

    assert (ship_parcel.name, ship_parcel.description) == ("ship", "Ship a parcel.")
    registry = create_tool_registry([ship_parcel])
    result = await dispatch_tool_call(
        call("ship", {"address": {"city": "Oslo", "zip_code": "01500"}, "window": {"start": 3}}),
        registry=registry,
        redactor=NOOP_REDACTOR,
    )
    assert result.get("isError") is None
    assert result["value"] == {"city": "Oslo", "zip_code": "01500"}
    address, window, call_id = seen[0]
    assert isinstance(address, Address) and window == Window(3, 10) and call_id == "c1"


@pytest.mark.anyio
async def test_invalid_arguments_become_tool_errors_without_values() -> None:
    ran: list[str] = []

    def ship(address: Address, count: int = 1) -> str:
        ran.append("ran")
        return "ok"

    registry = create_tool_registry([define_tool(ship)])
    # Caught by pydantic's validator (the JSON schema cannot say "five digits").
    bad_zip = await dispatch_tool_call(
        call("ship", {"address": {"city": "Oslo", "zip_code": "secret-123"}}),
        registry=registry,
        redactor=NOOP_REDACTOR,
    )
    assert bad_zip["isError"] is True
    assert bad_zip["value"]["code"] == INVALID_ARGUMENTS
    assert "args.address.zip_code" in bad_zip["value"]["message"]
    assert "secret-123" not in bad_zip["value"]["message"]
    # Caught by the JSON schema before the function is reached.
    missing = await dispatch_tool_call(
        call("ship", {"count": 2}), registry=registry, redactor=NOOP_REDACTOR
    )
    assert missing["value"]["code"] == INVALID_ARGUMENTS
    extra = await dispatch_tool_call(
        call("ship", {"address": {"city": "a", "zip_code": "12345"}, "colour": "red"}),
        registry=registry,
        redactor=NOOP_REDACTOR,
    )
    assert extra["value"]["code"] == INVALID_ARGUMENTS
    assert ran == []


@pytest.mark.anyio
async def test_a_run_goes_on_after_a_validation_error() -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    provider = create_mock_provider(
        [
            [provider_tool_call("c1", "add", {"a": "two", "b": 3}), provider_done("tool_use")],
            [provider_tool_call("c2", "add", {"a": 2, "b": 3}), provider_done("tool_use")],
            [provider_text_delta("5"), provider_done("stop")],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "m"}, provider=provider, tools=[define_tool(add)]
    )
    session = agent.create_session("s")
    result = await session.run("2 + 3?")
    assert result.text == "5"
    entries = await session.entries()
    results = [
        part for e in entries if e["message"]["role"] == "tool" for part in e["message"]["content"]
    ]
    assert results[0]["isError"] is True and results[1]["result"] == 5
    declared = provider.requests[0]["tools"][0]
    assert declared["description"] == "Add two integers."
    assert declared["parameters"]["required"] == ["a", "b"]


def test_raw_execute_form_is_kept() -> None:
    def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        """Echo."""
        return args

    for built in (tool(execute), define_tool(execute), define_tool("echo", execute)):
        assert built.execute is execute and built.parameters is None
    assert define_tool(name="kw", execute=execute).name == "kw"
    assert define_tool(execute, name="renamed").name == "renamed"


@pytest.mark.anyio
async def test_sync_function_returning_an_awaitable_is_awaited() -> None:
    async def later() -> Window:
        return Window(1, 2)

    def schedule() -> Any:
        return later()

    registry = create_tool_registry([define_tool(schedule)])
    result = await dispatch_tool_call(
        call("schedule", {}), registry=registry, redactor=NOOP_REDACTOR
    )
    assert result["value"] == {"start": 1, "end": 2}


def test_unusable_signatures_are_config_errors_naming_the_tool() -> None:
    def varargs(*items: str) -> None: ...

    def positional(x: int, /) -> None: ...

    def opaque(handle: Handle) -> None: ...

    with pytest.raises(ConfigError, match=r"tool 'varargs': \*items"):
        define_tool(varargs)
    with pytest.raises(ConfigError, match=r"'positional'.*positional-only"):
        define_tool(positional)
    with pytest.raises(ConfigError, match="tool 'opaque': cannot build a JSON schema"):
        define_tool(opaque)
    with pytest.raises(ConfigError, match="takes"):
        define_tool(42)  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match="name twice"):
        define_tool("a", varargs, name="b")  # type: ignore[call-overload]


def test_a_type_only_known_locally_is_a_config_error_naming_it() -> None:
    class Local(BaseModel):  # annotations are strings here: Local cannot be resolved
        x: int

    def uses_local(item: Local) -> int:
        return item.x

    with pytest.raises(ConfigError, match=r"tool 'uses_local': cannot resolve a type hint .*Local"):
        define_tool(uses_local)


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Visit(BaseModel):
    day: datetime.date
    colour: Colour


@pytest.mark.anyio
async def test_typed_returns_are_serialised_through_their_annotation(tmp_path: Any) -> None:
    # list[Model], date and Enum returns used to end the run with
    # "StoreError: not JSON serializable" when the result was appended.
    from prism.stores import create_jsonl_session_store

    def visits() -> list[Visit]:
        """Every visit."""
        return [Visit(day=datetime.date(2026, 1, 2), colour=Colour.RED)]

    async def today() -> datetime.date:
        """Today."""
        return datetime.date(2026, 3, 4)

    def colour() -> Colour:
        """A colour."""
        return Colour.BLUE

    def tagged() -> dict[str, Any]:  # a looser annotation: dumped by runtime type
        """Tags."""
        return {"when": datetime.datetime(2026, 5, 6, 7, 8), "tags": {"a"}, "id": uuid.UUID(int=1)}

    provider = create_mock_provider(
        [
            [
                provider_tool_call("c1", "visits", {}),
                provider_tool_call("c2", "today", {}),
                provider_tool_call("c3", "colour", {}),
                provider_tool_call("c4", "tagged", {}),
                provider_done("tool_use"),
            ],
            [provider_text_delta("ok"), provider_done("stop")],
        ]
    )
    store = create_jsonl_session_store(tmp_path / "s.jsonl")
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=provider,
        tools=[define_tool(f) for f in (visits, today, colour, tagged)],
        store=store,
    )
    result = await agent.create_session("s").run("go")
    assert result.text == "ok"
    reread = await agent.open_session("s", must_exist=True)  # from the file
    entries = await reread.entries()
    values = [
        part["result"]
        for e in entries
        if e["message"]["role"] == "tool"
        for part in e["message"]["content"]
    ]
    assert values == [
        [{"day": "2026-01-02", "colour": "red"}],
        "2026-03-04",
        "blue",
        {
            "when": "2026-05-06T07:08:00",
            "tags": ["a"],
            "id": "00000000-0000-0000-0000-000000000001",
        },
    ]


@dataclasses.dataclass
class Stop:
    at: datetime.date
    tags: set[str]


@pytest.mark.anyio
async def test_returns_are_json_at_every_depth_not_only_the_top() -> None:
    # docs/tools.md promises conversion at any depth, annotated or not.
    def route() -> dict[str, list[Stop]]:
        """A route."""
        return {"stops": [Stop(datetime.date(2026, 1, 2), {"a"})]}

    def loose():  # unannotated on purpose
        """No annotation: dumped by runtime type."""
        return [{"deep": [Stop(datetime.date(2026, 1, 3), set()), Colour.RED, uuid.UUID(int=2)]}]

    provider = create_mock_provider(
        [
            [
                provider_tool_call("c1", "route", {}),
                provider_tool_call("c2", "loose", {}),
                provider_done("tool_use"),
            ],
            [provider_text_delta("ok"), provider_done("stop")],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=provider,
        tools=[define_tool(route), define_tool(loose)],
    )
    await agent.create_session().run("go")
    results = [
        part["result"]
        for message in provider.requests[1]["messages"]
        if message["role"] == "tool"
        for part in message["content"]
    ]
    assert results == [
        {"stops": [{"at": "2026-01-02", "tags": ["a"]}]},
        [
            {
                "deep": [
                    {"at": "2026-01-03", "tags": []},
                    "red",
                    "00000000-0000-0000-0000-000000000002",
                ]
            }
        ],
    ]


@pytest.mark.anyio
async def test_a_return_nothing_can_serialise_is_a_tool_error_the_run_survives(
    tmp_path: Any,
) -> None:
    from prism.stores import create_jsonl_session_store

    def opaque() -> Any:
        """Something opaque."""
        return {"handle": Handle()}

    def raw(args: dict[str, Any], ctx: ToolContext) -> Any:
        """A raw tool returning what JSON cannot hold."""
        return {"at": datetime.date(2026, 1, 1)}

    def not_a_number() -> float:
        """NaN."""
        return math.nan

    def half_a_pair() -> str:
        """A str with a lone surrogate (bytes decoded with surrogateescape)."""
        return "caf\udce9"

    provider = create_mock_provider(
        [
            [
                provider_tool_call("c1", "opaque", {}),
                provider_tool_call("c2", "raw", {}),
                provider_tool_call("c3", "not_a_number", {}),
                provider_tool_call("c4", "half_a_pair", {}),
                provider_done("tool_use"),
            ],
            [provider_text_delta("recovered"), provider_done("stop")],
        ]
    )
    agent = create_agent(
        model={"provider": "mock", "model": "m"},
        provider=provider,
        tools=[
            define_tool(opaque),
            define_tool(raw),
            define_tool(not_a_number),
            define_tool(half_a_pair),
        ],
        store=create_jsonl_session_store(tmp_path / "s.jsonl"),
    )
    session = agent.create_session("s")
    result = await session.run("go")
    assert result.text == "recovered"
    parts = [
        part
        for e in await session.entries()
        if e["message"]["role"] == "tool"
        for part in e["message"]["content"]
    ]
    assert all(part["isError"] for part in parts)
    messages = [part["result"]["message"] for part in parts]
    assert messages[0].startswith("tool 'opaque' returned a value that cannot be serialised")
    assert "Handle" in messages[0]
    assert messages[1] == (
        "tool 'raw' returned a value that is not JSON: "
        "Object of type date is not JSON serializable at $.at"
    )
    assert messages[2].startswith("tool 'not_a_number' returned a value that is not JSON")
    # Used to end the run with a StoreError when the result was appended.
    assert messages[3] == (
        "tool 'half_a_pair' returned a value that is not JSON: "
        "str with a lone surrogate has no UTF-8 encoding at $"
    )
    # The model saw the errors in the next request.
    seen = [
        c for m in provider.requests[1]["messages"] if m["role"] == "tool" for c in m["content"]
    ]
    assert [c["isError"] for c in seen] == [True, True, True, True]
