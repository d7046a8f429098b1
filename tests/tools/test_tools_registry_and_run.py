from __future__ import annotations

from typing import Any

import anyio
import pytest

from prism.contracts import ToolCall, ToolResult
from prism.errors import ConfigError
from prism.security import NOOP_REDACTOR
from prism.tools import ToolContext, create_tool_registry, define_tool, run_tool_calls


def noop(args: dict[str, Any], ctx: ToolContext) -> str:
    return "ok"


def test_allow_and_deny_are_exact_and_deny_wins() -> None:
    registry = create_tool_registry(
        [define_tool(name, noop) for name in ("read", "read_file", "write", "rm")],
        allow=["read", "write", "rm"],
        deny=["rm"],
    )
    assert [t.name for t in registry.active()] == ["read", "write"]
    assert registry.is_active("read") and not registry.is_active("read_file")
    assert not registry.is_active("rm") and registry.get("rm") is not None
    assert not registry.is_active("missing")
    assert [d["name"] for d in registry.declarations()] == ["read", "write"]
    assert registry.names() == ["read", "read_file", "write", "rm"]
    assert "rm" in registry and len(registry) == 4


def test_with_filters_can_only_narrow() -> None:
    registry = create_tool_registry(
        [define_tool(name, noop) for name in ("a", "b", "c")], allow=["a", "b"]
    )
    narrowed = registry.with_filters(allow=["b", "c"], deny=["x"])
    assert [t.name for t in narrowed.active()] == ["b"]
    assert narrowed.deny == {"x"}
    assert [t.name for t in registry.with_filters().active()] == ["a", "b"]


def test_register_unregister_and_bad_input() -> None:
    registry = create_tool_registry()
    unregister = registry.register(define_tool("a", noop))
    with pytest.raises(ConfigError, match="already registered"):
        registry.register(define_tool("a", noop))
    unregister()
    assert registry.get("a") is None
    with pytest.raises(ConfigError, match="expects a ToolDefinition"):
        registry.register({"name": "a"})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not a single string"):
        create_tool_registry(allow="read")
    with pytest.raises(ConfigError, match="non-empty strings"):
        create_tool_registry(deny=[""])
    with pytest.raises(ConfigError, match="already registered"):
        create_tool_registry([define_tool("a", noop), define_tool("a", noop)])


class Tracker:
    """Records start/end events per call and the peak number running at once;
    each tool waits on a gate the test opens, so overlap is structural, not timed."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.running = 0
        self.peak = 0
        self.gates: dict[str, anyio.Event] = {}

    def make(self, name: str, *, exclusive: bool = False) -> Any:
        async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
            key = str(ctx.tool_call_id)
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.log.append(f"start {key}")
            gate = self.gates.setdefault(key, anyio.Event())
            await gate.wait()
            self.running -= 1
            self.log.append(f"end {key}")
            return key

        return define_tool(name, execute, exclusive=exclusive)


def calls(*names: str) -> list[ToolCall]:
    return [{"id": f"c{i}", "name": name, "arguments": {}} for i, name in enumerate(names)]


async def drive(tracker: Tracker, coro: Any, total: int) -> Any:
    """Release gates one at a time, in whatever order calls become blocked."""
    results: list[Any] = []
    async with anyio.create_task_group() as group:

        async def run() -> None:
            results.append(await coro)

        group.start_soon(run)
        released = 0
        while released < total:
            waiting: list[str] = []
            # A task-group exit can take a few scheduler passes before the next
            # call starts, so look again a bounded number of times.
            for _ in range(100):
                await anyio.wait_all_tasks_blocked()
                waiting = [key for key, gate in tracker.gates.items() if not gate.is_set()]
                if waiting:
                    break
            assert waiting, f"no tool is waiting; log={tracker.log}"
            tracker.gates[sorted(waiting)[0]].set()
            released += 1
    return results[0]


@pytest.mark.anyio
async def test_concurrency_limit_and_call_order_results() -> None:
    tracker = Tracker()
    registry = create_tool_registry([tracker.make("work")])
    finished: list[int] = []
    results = await drive(
        tracker,
        run_tool_calls(
            calls(*["work"] * 5),
            registry=registry,
            concurrency=2,
            on_result=lambda index, result: finished.append(index),
            redactor=NOOP_REDACTOR,
        ),
        5,
    )
    assert [r["value"] for r in results] == ["c0", "c1", "c2", "c3", "c4"]
    assert tracker.peak == 2
    assert sorted(finished) == [0, 1, 2, 3, 4]


@pytest.mark.anyio
async def test_concurrency_one_is_sequential() -> None:
    tracker = Tracker()
    registry = create_tool_registry([tracker.make("work")])
    await drive(
        tracker,
        run_tool_calls(calls("work", "work", "work"), registry=registry, redactor=NOOP_REDACTOR),
        3,
    )
    assert tracker.peak == 1
    assert tracker.log == ["start c0", "end c0", "start c1", "end c1", "start c2", "end c2"]


@pytest.mark.anyio
async def test_exclusive_tool_runs_alone() -> None:
    tracker = Tracker()
    registry = create_tool_registry([tracker.make("work"), tracker.make("lock", exclusive=True)])
    results = await drive(
        tracker,
        run_tool_calls(
            calls("work", "work", "lock", "work", "work"),
            registry=registry,
            concurrency=4,
            redactor=NOOP_REDACTOR,
        ),
        5,
    )
    assert [r["value"] for r in results] == ["c0", "c1", "c2", "c3", "c4"]
    lock_start = tracker.log.index("start c2")
    lock_end = tracker.log.index("end c2")
    assert lock_end == lock_start + 1  # nothing started or ended while it ran
    assert {"end c0", "end c1"} <= set(tracker.log[:lock_start])
    assert {"start c3", "start c4"} <= set(tracker.log[lock_end:])
    assert tracker.peak == 2


@pytest.mark.anyio
async def test_refused_calls_do_not_block_the_batch() -> None:
    registry = create_tool_registry([define_tool("ok", noop)])
    results: list[ToolResult] = await run_tool_calls(
        calls("ok", "missing", "ok"), registry=registry, concurrency=3, redactor=NOOP_REDACTOR
    )
    assert [r.get("isError", False) for r in results] == [False, True, False]
    assert [r["toolCallId"] for r in results] == ["c0", "c1", "c2"]


@pytest.mark.anyio
async def test_on_start_and_async_callbacks() -> None:
    registry = create_tool_registry([define_tool("ok", noop)])
    started: list[int] = []

    async def on_start(index: int, call: ToolCall) -> None:
        started.append(index)

    await run_tool_calls(
        calls("ok", "ok"), registry=registry, on_start=on_start, redactor=NOOP_REDACTOR
    )
    assert started == [0, 1]


@pytest.mark.anyio
async def test_bad_concurrency_rejected() -> None:
    registry = create_tool_registry()
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="concurrency must be an int >= 1"):
            await run_tool_calls([], registry=registry, concurrency=bad, redactor=NOOP_REDACTOR)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_cancellation_cancels_every_running_call() -> None:
    tracker = Tracker()
    registry = create_tool_registry([tracker.make("work")])
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: run_tool_calls(
                    calls("work", "work"), registry=registry, concurrency=2, redactor=NOOP_REDACTOR
                )
            )
            await anyio.wait_all_tasks_blocked()
            scope.cancel()
    assert tracker.log == ["start c0", "start c1"]
    assert tracker.running == 2  # neither finished


@pytest.mark.anyio
async def test_empty_call_list() -> None:
    assert (
        await run_tool_calls(
            [], registry=create_tool_registry(), concurrency=3, redactor=NOOP_REDACTOR
        )
        == []
    )
