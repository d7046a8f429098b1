"""rpc mode: LF-delimited JSON requests on stdin, responses and events on stdout.

One loop reads requests in order. ``prompt``/``followUp`` start a run in a
task and answer when it ends; every other request is answered before the
next line is read, so runs keep streaming while the client talks. Runs are
tracked per session: a second run on a busy session is refused at once.
At EOF the loop stops reading, lets active runs finish, and exits 0.
All output goes through one LineWriter (whole lines, flushed each time).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio
from anyio.abc import TaskGroup, TaskStatus

from prism._json_fields import json_keys
from prism.cli.contributions import HostContributions
from prism.cli.host import CliHost, CommandContext, create_host, describe_exception
from prism.cli.io import LineTooLong, LineWriter, iter_request_lines
from prism.cli.options import CliOptions, UsageProblem, validate_session_id
from prism.cli.providers import model_for
from prism.cli.rpc_approvals import (
    DecisionParamsError,
    list_approvals,
    parse_decision,
    paused_fields,
)
from prism.cli.rpc_protocol import (
    RequestId,
    RpcRequest,
    RpcRequestError,
    error_info,
    error_response,
    event_envelope,
    ok_response,
    parse_request,
)
from prism.compaction.options import CompactionOptions
from prism.contracts import ErrorInfo
from prism.errors import ConfigError, PrismError, SessionBusyError, redact_error_info
from prism.extensions import execute_command
from prism.runtime import Agent, AgentSession, RunResult
from prism.runtime.input import normalize_input
from prism.security.redaction import redact_keeping_ids

# The two compaction options an RPC client may set per call, under their wire
# (camelCase) names as prism._json_fields spells every CompactionOptions field.
_COMPACT_KEYS = {
    key: name
    for key, name in json_keys(CompactionOptions).items()
    if name in ("keep_recent_entries", "max_summary_chars")
}


class RpcFailure(Exception):
    """A request failed with this ErrorInfo (answered ``ok: false``)."""

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(info["message"])
        self.info = info


def _fail(message: str, code: str = "invalid_params") -> RpcFailure:
    return RpcFailure(error_info(message, code))


@dataclass(slots=True)
class ActiveRun:
    request_id: RequestId
    session: AgentSession


class RpcServer:
    def __init__(self, host: CliHost, writer: LineWriter, group: TaskGroup) -> None:
        self.host = host
        self.writer = writer
        self.group = group
        self.session: AgentSession = host.create_session()
        self.active: dict[str, ActiveRun] = {}
        self._handlers: dict[str, Callable[[RpcRequest], Awaitable[Any]]] = {
            "state": self._state,
            "messages": self._messages,
            "abort": self._abort,
            "steer": self._steer,
            "setModel": self._set_model,
            "compact": self._compact,
            "switchSession": self._switch_session,
            "forkSession": self._fork_session,
            "cloneSession": self._clone_session,
            "command": self._command,
            "approvals": self._approvals,
        }

    # --- the loop -------------------------------------------------------------------

    async def handle_line(self, line: bytes | LineTooLong) -> None:
        if isinstance(line, LineTooLong):
            self.writer.write_json(
                self._error_response(None, error_info(str(line), "invalid_request"))
            )
            return
        try:
            request = parse_request(line)
        except RpcRequestError as refused:
            self.writer.write_json(self._error_response(refused.request_id, refused.info))
            return
        if request.command in _RUN_COMMANDS:
            try:
                await _RUN_COMMANDS[request.command](self, request)
            except RpcFailure as failure:
                self.writer.write_json(self._error_response(request.id, failure.info))
            return
        try:
            result = await self._handlers[request.command](request)
        except RpcFailure as failure:
            self.writer.write_json(self._error_response(request.id, failure.info))
        except Exception as error:  # answered, never fatal to the loop
            info = describe_exception(error, self.host.agent.config.redactor)
            self.writer.write_json(self._error_response(request.id, info))
        else:
            self.writer.write_json(self._ok_response(request.id, result))

    # Responses may quote what the client or the command line supplied (an
    # unknown command name, the recorded flags): every response is redacted
    # on its way out, rather than each call site remembering to.
    def _error_response(self, request_id: RequestId | None, info: ErrorInfo) -> dict[str, Any]:
        return error_response(request_id, redact_error_info(info, self.host.agent.config.redactor))

    def _ok_response(self, request_id: RequestId, result: Any) -> dict[str, Any]:
        return ok_response(request_id, redact_keeping_ids(result, self.host.agent.config.redactor))

    def _error_info(self, error: PrismError) -> ErrorInfo:
        return describe_exception(error, self.host.agent.config.redactor)

    # --- runs -----------------------------------------------------------------------

    async def _start_run(self, request: RpcRequest) -> None:
        session = self.session
        self._refuse_busy(session)
        if "input" not in request.params:
            raise _fail(f"{request.command} needs params.input")
        try:
            normalize_input(request.params["input"])  # refuse bad input before any run starts
        except ConfigError as error:
            raise RpcFailure(self._error_info(error)) from None
        active = ActiveRun(request.id, session)
        self.active[session.id] = active
        # Returns once the session has claimed the run: an abort or steer read
        # on the next line reaches it, however early.
        await self.group.start(self._run, active, request.params["input"])

    async def _run(self, active: ActiveRun, value: Any, *, task_status: TaskStatus[None]) -> None:
        session = active.session
        track = _RunTrack(self.writer, active.request_id)
        failure: ErrorInfo | None = None
        outcome: RunResult | None = None
        started = False
        try:
            async with session.stream(value) as events:
                task_status.started()
                started = True
                async for event in events:
                    track.see(event)
            outcome = events.result
        except Exception as error:
            failure = describe_exception(error, self.host.agent.config.redactor)
        finally:
            self.active.pop(session.id, None)
            if not started:  # refused before the claim: the error response below answers it
                task_status.started()
        await self._answer_run(active, track, failure, outcome)

    async def _answer_run(
        self,
        active: ActiveRun,
        track: _RunTrack,
        failure: ErrorInfo | None,
        outcome: RunResult | None,
    ) -> None:
        """The run's response (its error, or its result and whether it is
        paused for approval), then the post-run gate."""
        session = active.session
        failure = track.failure or failure
        finished = track.finished
        if failure is None and finished is None:
            failure = error_info("Agent run aborted", "aborted")
        if failure is not None:
            self.writer.write_json(self._error_response(active.request_id, failure))
            return
        assert finished is not None
        result: dict[str, Any] = {
            "sessionId": session.id,
            "runId": finished.get("runId"),
            "text": track.text,
        }
        for key in ("stopReason", "usage", "toolRounds"):
            if key in finished:
                result[key] = finished[key]
        result.update(paused_fields(outcome))
        self.writer.write_json(self._ok_response(active.request_id, result))
        # --memory observational: the post-run gate, after the client has its
        # answer; om:status reports it as in flight meanwhile.
        await self.host.after_run(session)

    # --- approvals (prism.cli.rpc_approvals) -------------------------------------------

    async def _approvals(self, request: RpcRequest) -> dict[str, Any]:
        return await list_approvals(self.session)

    async def _start_decision(self, request: RpcRequest) -> None:
        """``approve``/``deny``: resume the paused run with one decision;
        answered like ``prompt`` when the resumed run ends."""
        try:
            approval, decision = parse_decision(request.command, request.params)
        except DecisionParamsError as problem:
            raise _fail(str(problem)) from None
        session = self.session
        self._refuse_busy(session)
        active = ActiveRun(request.id, session)
        self.active[session.id] = active
        await self.group.start(self._resume, active, {approval: decision})

    async def _resume(
        self, active: ActiveRun, decisions: dict[str, Any], *, task_status: TaskStatus[None]
    ) -> None:
        session = active.session
        track = _RunTrack(self.writer, active.request_id)
        unsubscribe = session.subscribe(track.see)
        failure: ErrorInfo | None = None
        outcome: RunResult | None = None
        task_status.started()
        try:
            # An id the paused run does not wait on is refused here, before
            # anything runs (ApprovalDecisionError).
            outcome = await session.resume(decisions)
        except Exception as error:
            failure = describe_exception(error, self.host.agent.config.redactor)
        finally:
            unsubscribe()
            self.active.pop(session.id, None)
        await self._answer_run(active, track, failure, outcome)

    def _refuse_busy(self, session: AgentSession) -> None:
        if session.id in self.active or session.is_running:
            raise RpcFailure(
                error_info(
                    f"session {session.id!r} already has an active run", SessionBusyError.code
                )
            )

    async def _abort(self, request: RpcRequest) -> dict[str, Any]:
        reason = request.params.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise _fail("abort params.reason must be a string")
        session = self.session
        return {"sessionId": session.id, "aborted": session.abort(reason)}

    async def _steer(self, request: RpcRequest) -> dict[str, Any]:
        if "input" not in request.params:
            raise _fail("steer needs params.input")
        if not self.session.is_running:
            raise RpcFailure(
                error_info("steer needs an active run on this session", "no_active_run")
            )
        value = request.params["input"]
        try:
            self.session.steer(value)  # NoActiveRunError once the run is finishing
        except ConfigError as error:
            raise RpcFailure(self._error_info(error)) from None
        return {"sessionId": self.session.id}

    # --- reads and session changes ------------------------------------------------------

    async def _state(self, request: RpcRequest) -> dict[str, Any]:
        state = await self.session.state()
        state["activeRuns"] = sorted(self.active)
        state["persisted"] = self.host.session_file is not None
        return state

    async def _messages(self, request: RpcRequest) -> dict[str, Any]:
        return {"sessionId": self.session.id, "messages": await self.session.messages()}

    async def _set_model(self, request: RpcRequest) -> dict[str, Any]:
        value = request.params.get("model")
        provider = self.session.current_model["provider"]
        overrides: dict[str, Any] = {}
        if isinstance(value, dict):
            overrides = dict(value)
            value = overrides.get("model")
        if not isinstance(value, str) or not value.strip():
            raise _fail("setModel needs params.model: a model name or {model, provider?}")
        wanted = overrides.get("provider", provider)
        if not isinstance(wanted, str) or not wanted:
            raise _fail("setModel params.model.provider must be a provider name")
        if wanted != provider:
            if self.session.id in self.active or self.session.is_running:
                raise RpcFailure(
                    error_info(
                        "setModel cannot switch provider while the session has an active run",
                        "session_busy",
                    )
                )
            try:
                self.session = await self.host.use_provider(wanted, self.session)
            except UsageProblem as problem:
                raise _fail(str(problem)) from None
            provider = wanted
        model: dict[str, Any] = {**model_for(provider, value), **overrides}
        entry = await self.session.set_model(model)  # type: ignore[arg-type]
        return {"sessionId": self.session.id, "model": entry.get("model"), "entryId": entry["id"]}

    async def _compact(self, request: RpcRequest) -> dict[str, Any]:
        if self.session.id in self.active or self.session.is_running:
            raise RpcFailure(
                error_info("cannot compact while the session has an active run", "session_busy")
            )
        options: dict[str, Any] = {}
        for key, value in request.params.items():
            name = _COMPACT_KEYS.get(key)
            if name is None:
                raise _fail(f"unknown compact option {key!r}")
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise _fail(f"compact option {key!r} must be a non-negative integer")
            options[name] = value
        entry = await self.session.compact(**options)
        return {
            "sessionId": self.session.id,
            "entryId": entry["id"],
            "summary": entry.get("summary"),
        }

    def _session_id_param(self, request: RpcRequest, key: str, *, required: bool) -> str | None:
        value = request.params.get(key)
        if value is None:
            if required:
                raise _fail(f"{request.command} needs params.{key}")
            return None
        if not isinstance(value, str):
            raise _fail(f"{request.command} params.{key} must be a string")
        try:
            return validate_session_id(value, what=f"params.{key}")
        except UsageProblem as problem:
            raise _fail(str(problem)) from None

    async def _switch_session(self, request: RpcRequest) -> dict[str, Any]:
        session_id = self._session_id_param(request, "sessionId", required=True)
        assert session_id is not None
        active = self.active.get(session_id)
        # A session with a run in flight keeps its handle so the run and the
        # client see the same state.
        self.session = active.session if active else await self.host.open_session(session_id)
        return await self._switched()

    async def _fork_session(self, request: RpcRequest) -> dict[str, Any]:
        entry_id = request.params.get("entryId")
        if entry_id is not None and not isinstance(entry_id, str):
            raise _fail("forkSession params.entryId must be a string")
        new_id = self._session_id_param(request, "sessionId", required=False)
        if entry_id is not None:
            entry = await self.session.store.get(entry_id)
            if entry is None or entry.get("sessionId") != self.session.id:
                raise _fail(
                    f"forkSession: no entry {entry_id[:100]!r} in session {self.session.id!r}",
                    "unknown_entry",
                )
        self.session = await self.session.fork(entry_id, id=new_id)
        return await self._switched()

    async def _clone_session(self, request: RpcRequest) -> dict[str, Any]:
        new_id = self._session_id_param(request, "sessionId", required=False)
        self.session = await self.session.clone(id=new_id)
        return await self._switched()

    async def _switched(self) -> dict[str, Any]:
        self.host.track(self.session)
        state = await self.session.state()
        return {
            "sessionId": self.session.id,
            "leafId": state.get("leafId"),
            "entryCount": state.get("entryCount"),
        }

    async def _command(self, request: RpcRequest) -> Any:
        name = request.params.get("name")
        if not isinstance(name, str):
            raise _fail("command needs params.name (a string)")
        args = request.params.get("args", {})
        if not isinstance(args, dict):
            raise _fail("command params.args must be an object")
        if not self.host.commands.has(name):
            # Redact, then clip: a clip first could leave a secret's prefix behind.
            shown = self.host.agent.config.redactor.redact_text(name)[:100]
            raise RpcFailure(error_info(f"unknown command {shown!r}", "unknown_command"))
        context = CommandContext(session=self.session, host=self.host)
        return await execute_command(
            self.host.commands, name, args, context, redactor=self.host.agent.config.redactor
        )


class _RunTrack:
    """Streams a run's events under its request id and keeps what the
    response reports: the failure, the ``run_finished`` event, the text."""

    __slots__ = ("failure", "finished", "request_id", "text", "writer")

    def __init__(self, writer: LineWriter, request_id: RequestId) -> None:
        self.writer = writer
        self.request_id = request_id
        self.failure: ErrorInfo | None = None
        self.finished: dict[str, Any] | None = None
        self.text = ""

    def see(self, event: Any) -> None:
        self.writer.write_json(event_envelope(self.request_id, event))
        if event["type"] == "error":
            self.failure = event.get("error")
        elif event["type"] == "run_finished":
            self.finished = dict(event)
        elif event["type"] == "message_finished" and event.get("role") == "assistant":
            self.text = _message_text(event.get("message"))


# Requests that start (or resume) a run: answered when the run ends.
_RUN_COMMANDS: dict[str, Callable[[RpcServer, RpcRequest], Awaitable[None]]] = {
    "prompt": RpcServer._start_run,
    "followUp": RpcServer._start_run,
    "approve": RpcServer._start_decision,
    "deny": RpcServer._start_decision,
}


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    return "".join(
        block.get("text", "")
        for block in message.get("content", [])
        if isinstance(block, dict) and block.get("type") == "text"
    )


async def serve_rpc(options: CliOptions, writer: LineWriter, stdin: BinaryIO) -> int:
    """``prism --mode rpc``: serve until EOF on ``stdin``."""
    host = create_host(options)
    await host.start()
    return await _serve(host, writer, stdin)


async def serve_agent(
    agent: Agent,
    *,
    input: BinaryIO,
    output: BinaryIO,
    session: str | None,
    contributions: HostContributions,
) -> int:
    """``prism.cli.serve_rpc``: the same server around a host's agent."""
    try:
        if session is not None:
            validate_session_id(session, what="serve_rpc session")
        options = CliOptions(mode="rpc", session=session)
        host = CliHost(options, contributions=contributions, agent=agent)
        await host.start()
    except UsageProblem as problem:
        raise ConfigError(str(problem)) from None
    return await _serve(host, LineWriter(output), input)


async def _serve(host: CliHost, writer: LineWriter, stdin: BinaryIO) -> int:
    async with anyio.create_task_group() as group:
        server = RpcServer(host, writer, group)
        async for line in iter_request_lines(stdin):
            await server.handle_line(line)
        # EOF: stop reading; the task group waits for active runs to finish.
    return 0
