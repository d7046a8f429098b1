"""The engine-neutral half of running a Prism run under a replaying engine.

Engines such as DBOS recover a run by calling its code again from the top:
each recorded step returns its recorded result instead of running, and the
code between steps runs again. For a Prism run that means three things,
which :class:`ReplayJournal` provides and an engine subclass only adds
recording to (``record`` and ``sleep``):

* **Deterministic ids.** The n-th entry id of a run is a pure function of
  the run id and n, so a replay draws the same ids in the same order.
* **No append made twice.** An entry whose id the store already holds was
  appended by an earlier execution: the replay takes the stored copy and
  moves the session's leaf over it instead of writing it again. This also
  covers a crash after an append but before its step was recorded.
* **The run starts where it started.** On replay the session's branch is
  put back to the entry the run's first input was appended under, so the
  loop sees (and shapes requests from, and auto-compacts on) exactly what
  the first execution saw, whatever was appended after.

A tool call's ``tool_start`` checkpoint that a replay finds already stored
means an earlier execution started that call: ``started_before`` says so,
and the loop answers a non-idempotent call ``interrupted`` rather than run
it a second time (docs/durable.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from prism.contracts import Message, SessionEntry
from prism.errors import PrismError, ReplayDivergedError
from prism.runtime.durable import is_checkpoint_entry
from prism.runtime.result import RunResult
from prism.security.redaction import SecretRedactor, redact_keeping_ids

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from prism.runtime.context import AppendBatch, Run, RunJournal
    from prism.runtime.options import RunOptions
    from prism.runtime.session import AgentSession

__all__ = ["ReplayJournal", "result_from_record", "result_to_record", "run_journaled"]

T = TypeVar("T")


class ReplayJournal:
    """A run's journal for an engine that replays it (``RunJournal``).

    Used as is, steps are not recorded (each execution runs them again) but
    ids and appends are replay-safe: running the same run id twice against
    the same store yields one copy of every entry. Engines subclass it and
    override :meth:`record` and :meth:`sleep`.
    """

    def __init__(self, run_id: str) -> None:
        if not isinstance(run_id, str) or not run_id:
            raise ValueError("a journal needs a non-empty run id")
        self._run_id = run_id
        self._position = 0
        self._stored: dict[str, SessionEntry] = {}
        self._started: set[str] = set()
        self._run: Run | None = None
        self.replayed_entries = 0
        """Entries this execution found already stored instead of appending."""

    engine = "replay"
    """Written in the run's checkpoints (``engine``): ``session.resume()``
    leaves a run an engine owns to that engine."""

    @property
    def run_id(self) -> str:
        return self._run_id

    def entry_id_at(self, position: int) -> str:
        digest = hashlib.sha256(f"{self._run_id}\x00{position}".encode()).hexdigest()
        return f"entry_{digest[:20]}"

    def entry_id(self) -> str:
        self._position += 1
        return self.entry_id_at(self._position)

    async def begin(self, run: Run, entries: Sequence[SessionEntry]) -> None:
        self._run = run
        self._stored = {e["id"]: e for e in entries if isinstance(e.get("id"), str)}
        first = self._stored.get(self.entry_id_at(1))
        if first is None:
            return  # a first execution: nothing of this run is stored yet
        parent = first.get("parentId")
        run.port.branch.reset(entries if parent is not None else (), parent)
        # The frontier is rebuilt from the branch as the first execution's was.
        run.port.frontier = None

    async def append(self, entries: list[SessionEntry], write: AppendBatch) -> list[SessionEntry]:
        stored = self._stored
        if not entries or entries[0]["id"] not in stored:
            self._refuse_stored(entries)
            return await write(entries)
        found: list[SessionEntry] = []
        for entry in entries:
            copy = stored.get(entry["id"])
            if copy is None:
                break
            if copy.get("kind") != entry.get("kind"):
                raise ReplayDivergedError(
                    f"replaying run {self._run_id!r}: stored entry {entry['id']!r} is a"
                    f" {copy.get('kind')!r} entry where the run now appends a"
                    f" {entry.get('kind')!r} entry"
                )
            found.append(copy)
        rest = entries[len(found) :]
        self._refuse_stored(rest)
        run = self._run
        assert run is not None, "begin() runs before the run's first append"
        branch = run.port.branch
        if found[0].get("parentId") != branch.leaf_id:
            raise ReplayDivergedError(
                f"replaying run {self._run_id!r}: stored entry {found[0]['id']!r} is not"
                " on the branch the run is replaying"
            )
        branch.extend(found)
        self.replayed_entries += len(found)
        for copy in found:
            if is_checkpoint_entry(copy):
                data = copy.get("data")
                started = data.get("startedToolCallIds") if isinstance(data, Mapping) else None
                if isinstance(started, list):
                    self._started.update(s for s in started if isinstance(s, str))
        return found + (await write(rest) if rest else [])

    def _refuse_stored(self, entries: Sequence[SessionEntry]) -> None:
        for entry in entries:
            if entry["id"] in self._stored:
                raise ReplayDivergedError(
                    f"replaying run {self._run_id!r}: entry {entry['id']!r} is stored but an"
                    " entry the run appends before it is not"
                )

    async def step(self, name: str, body: Callable[[], Awaitable[T]]) -> T:
        """Run ``body`` as the engine's recorded step ``name``. Ids the body
        draws are part of the record: a replay that gets the recorded result
        without running the body moves past them too, so the ids after the
        step are the same either way. The record is redacted with the
        agent's secrets; the execution that ran the body goes on with its
        real result, a replay with the recorded one (as the run's stored
        entries are redacted copies anyway)."""
        before = self._position
        ran = False
        value: Any = None

        async def counted() -> dict[str, Any]:
            nonlocal ran, value
            ran = True
            try:
                value = await body()
            except Exception as error:
                # The engine keeps a failed step's exception too.
                raise self._redact_error(error) from None
            # What an engine keeps is a store: configured secrets never reach
            # it (ids excepted, as in session entries).
            return {"value": self._redact(value), "ids": self._position - before}

        record = await self.record(name, counted)
        if ran:
            return value  # type: ignore[no-any-return]
        self._position += int(record["ids"])
        return record["value"]  # type: ignore[no-any-return]

    def _redact_error(self, error: Exception) -> Exception:
        """``error`` itself, or, when its text holds a configured secret, a
        ``PrismError`` with that text redacted (its own attributes could
        hold the secret too, and an engine pickles them)."""
        redactor = self._redactor()
        if redactor is None or not redactor.contains(str(error)):
            return error
        code = getattr(error, "code", None)
        return PrismError(
            f"{type(error).__name__}: {redactor.redact_text(str(error))}",
            code=code if isinstance(code, str) else None,
        )

    def _redact(self, value: Any) -> Any:
        redactor = self._redactor()
        return value if redactor is None else redact_keeping_ids(value, redactor)

    def _redactor(self) -> SecretRedactor | None:
        """The agent's redactor, or None when it knows no secrets."""
        redactor = self._run.settings.config.redactor if self._run is not None else None
        return redactor if redactor is not None and len(redactor) else None

    async def record(
        self, name: str, body: Callable[[], Coroutine[Any, Any, dict[str, Any]]]
    ) -> dict[str, Any]:
        """Run ``body`` once and keep its (JSON-able) result, or return the
        result kept by an earlier execution without running it. Engines
        override this; here nothing is kept and every execution runs it."""
        return await body()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)

    def started_before(self, call_id: str) -> bool:
        return call_id in self._started

    def forget_started(self, call_id: str) -> None:
        self._started.discard(call_id)

    async def wait_for_approval(self, request: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """No durable wait here: the call fails closed. Engines override."""
        return None


async def run_journaled(
    session: AgentSession,
    input: str | Message | Sequence[Message],
    journal: RunJournal,
    **options: Unpack[RunOptions],
) -> RunResult:
    """``session.run(input, **options)`` under ``journal`` (a ``RunJournal``):
    the run's id is the journal's, it is durable, and it takes no steer or
    follow-up input (a replay could not reproduce input that arrived from
    outside). For engine integrations; ``prism.durable.dbos`` is one."""
    _, _, execute = session._begin(input, options, journal)
    return await execute()


def result_to_record(result: RunResult) -> dict[str, Any]:
    """A ``RunResult`` as plain JSON data (an engine's recorded workflow output)."""
    record = result.to_json()  # carries a structured output as JSON data
    record["messages"] = result.messages
    return record


def result_from_record(record: Mapping[str, Any]) -> RunResult:
    return RunResult(
        session_id=record["sessionId"],
        run_id=record["runId"],
        message=record.get("message"),
        text=record.get("text", ""),
        messages=list(record.get("messages") or []),
        usage=dict(record.get("usage") or {}),  # type: ignore[arg-type]
        stop_reason=record.get("stopReason"),
        tool_rounds=int(record.get("toolRounds") or 0),
        leaf_id=record.get("leafId"),
        output=record.get("output"),
    )
