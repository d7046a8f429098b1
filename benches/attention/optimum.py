"""The two anchor rows: the hindsight optimum and the best trigger-only
schedule, by dynamic programming over (request x thinking frontier x stub
frontier).

A schedule says, for each request, how many of the oldest thinking turns are
stripped (``t``) and how many of the oldest tool results are stubbed (``s``),
both sticky (never decreasing) and within the gate's keep rules
(``thinking_keep_turns`` and ``keep_last``; excluded, error and too-small
results are never items). The request stream is the compiler-off one: each
request is a prefix of the final history. Cost is the benchmark's: the
longest common prefix with the previous request is read at ``read``, the
rest written at ``write``.

Because row tokens add up per block, a request's size in state (t, s) is
``A - CT[t] - CS[s]`` (prefix sums of the savings), and when the state
changes the first changed row ``m`` is the oldest newly reduced item; the
rows before it are read. Splitting the predecessors by which frontier moved
turns the transition into prefix minima, so each request costs O(states).
``brute_force`` enumerates every schedule of a small model directly from
row lists and is what the tests check the programme against.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prism._bench.attention.scenario import VariantResult, row_tokens

INF = float("inf")


def _stub_text(block: dict[str, Any]) -> str:
    data = json.dumps(block["result"], separators=(",", ":"), ensure_ascii=False).encode()
    digest = hashlib.sha256(data).hexdigest()[:32]
    return f"Tool result {block['name']} [{block['toolCallId']}]: omitted {len(data)} bytes (sha256 {digest})"


@dataclass
class ScheduleModel:
    raw: list[int]  # tokens of each row of the final request (row 0: tools)
    t_pos: list[int]  # row of thinking item k
    t_save: list[int]
    s_pos: list[int]  # row of tool item k
    s_save: list[int]
    lengths: list[int]  # rows in request i
    t_elig: list[int]  # thinking items request i may reduce
    s_elig: list[int]
    seed_length: int | None = None  # rows of a cached earlier request (raw)

    @property
    def states(self) -> tuple[int, int]:
        return len(self.t_save) + 1, len(self.s_save) + 1


def build_model(
    final: dict[str, Any],
    lengths: Sequence[int],
    *,
    keep_thinking: int = 1,
    keep_last: int = 3,
    seed_length: int | None = None,
) -> ScheduleModel:
    """The schedule model of a compiler-off stream whose last request is
    ``final`` and whose requests carry ``lengths`` rows (tools + messages)."""
    rows = [final.get("tools", []), *final["messages"]]
    raw = [row_tokens(i, r) for i, r in enumerate(rows)]
    t_pos: list[int] = []
    t_save: list[int] = []
    s_pos: list[int] = []
    s_save: list[int] = []
    s_all: list[int] = []  # index among all tool results, per tool item
    thinking_rows: list[int] = []
    result_rows: list[int] = []  # row of each tool_result block, items or not
    for r, message in enumerate(rows[1:], start=1):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        if message.get("role") == "assistant" and any(b.get("type") == "thinking" for b in content):
            stripped = {**message, "content": [b for b in content if b.get("type") != "thinking"]}
            thinking_rows.append(r)
            t_pos.append(r)
            t_save.append(raw[r] - row_tokens(r, stripped))
        for b, block in enumerate(content):
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            result_rows.append(r)
            if block.get("isError"):
                continue
            stubbed = {**message, "content": list(content)}
            stubbed["content"][b] = {**block, "result": _stub_text(block)}
            saving = raw[r] - row_tokens(r, stubbed)
            if saving > 0:
                s_pos.append(r)
                s_save.append(saving)
                s_all.append(len(result_rows) - 1)
    t_elig: list[int] = []
    s_elig: list[int] = []
    for length in lengths:
        thinking = sum(1 for r in thinking_rows if r < length)
        t_elig.append(max(thinking - keep_thinking, 0))
        results = sum(1 for r in result_rows if r < length)
        s_elig.append(sum(1 for k in s_all if k < results - keep_last))
    return ScheduleModel(
        raw, t_pos, t_save, s_pos, s_save, list(lengths), t_elig, s_elig, seed_length
    )


class _Arrays:
    """Prefix sums and per-frontier prefix tokens of a model."""

    def __init__(self, model: ScheduleModel) -> None:
        self.model = model
        raw = np.array(model.raw, dtype=np.float64)
        reduced = raw.copy()
        for pos, save in zip(model.t_pos, model.t_save, strict=True):
            reduced[pos] -= save
        for pos, save in zip(model.s_pos, model.s_save, strict=True):
            reduced[pos] -= save
        self.A = np.concatenate([[0.0], np.cumsum(raw)])  # tokens of rows < m
        self.CT = np.concatenate([[0.0], np.cumsum(np.array(model.t_save, dtype=np.float64))])
        self.CS = np.concatenate([[0.0], np.cumsum(np.array(model.s_save, dtype=np.float64))])
        n_rows = len(model.raw) + 1
        self.nT = np.searchsorted(np.array(model.t_pos, dtype=np.int64), np.arange(n_rows))
        self.nS = np.searchsorted(np.array(model.s_pos, dtype=np.int64), np.arange(n_rows))
        nt, ns = model.states
        t_idx = np.arange(nt)[:, None]
        s_idx = np.arange(ns)[None, :]
        tp = np.array(model.t_pos, dtype=np.int64)
        sp = np.array(model.s_pos, dtype=np.int64)
        # Prefix tokens before the first changed row, in the new state (t, s):
        # P = A[m] - CT[min(t, nT[m])] - CS[min(s, nS[m])].
        if len(sp):  # case 1: only the stub frontier moved, from s' (m = s_pos[s'])
            m = sp[None, :]
            self.P1 = (
                self.A[m]
                - self.CT[np.minimum(t_idx, self.nT[m])]
                - self.CS[np.minimum(np.arange(len(sp))[None, :], self.nS[m])]
            )
        if len(tp):  # case 2: only the thinking frontier moved, from t'
            m = tp[:, None]
            self.P2 = (
                self.A[m]
                - self.CT[np.minimum(np.arange(len(tp))[:, None], self.nT[m])]
                - self.CS[np.minimum(s_idx, self.nS[m])]
            )
        if len(tp) and len(sp):  # case 3: both moved; every item before m is reduced
            m = np.minimum(tp[:, None], sp[None, :])
            self.P3 = self.A[m] - self.CT[self.nT[m]] - self.CS[self.nS[m]]

    def size(self, length: int) -> np.ndarray:
        return self.A[length] - self.CT[:, None] - self.CS[None, :]

    def valid(self, i: int) -> np.ndarray:
        nt, ns = self.model.states
        return (np.arange(nt)[:, None] <= self.model.t_elig[i]) & (
            np.arange(ns)[None, :] <= self.model.s_elig[i]
        )


def _check_append_only(model: ScheduleModel) -> None:
    """The programme assumes every item a request may reduce was already in
    the previous request (true whenever the keep rules protect at least the
    newest item of each kind and a request adds one turn): then a state
    change always rewrites from an old row. ``evaluate`` needs no such rule."""
    previous = model.seed_length
    for i, length in enumerate(model.lengths):
        if previous is not None:
            t, s = model.t_elig[i], model.s_elig[i]
            if (t and model.t_pos[t - 1] >= previous) or (s and model.s_pos[s - 1] >= previous):
                raise ValueError(
                    f"request {i} may reduce an item that was not in the previous request"
                )
        previous = length


def _shift_cummin(values: np.ndarray, axis: int) -> np.ndarray:
    """out[k] = min(values[:k]) along ``axis`` (inf for k = 0); one longer."""
    acc = np.minimum.accumulate(values, axis=axis)
    pad = [(0, 0), (0, 0)]
    pad[axis] = (1, 0)
    return np.pad(acc, pad, constant_values=INF)


def solve(
    model: ScheduleModel,
    *,
    read: float = 0.1,
    write: float = 1.25,
    cap: int | None = None,
    trigger: float | None = None,
) -> tuple[float, list[tuple[int, int]]]:
    """Minimum cost and one schedule reaching it. With ``trigger`` (a token
    count) only trigger-only schedules count: the state may change only at a
    request that is over the trigger in the previous state, and then must
    bring it to or under the trigger (or reduce everything eligible). ``cap``
    makes states over it infeasible."""
    _check_append_only(model)
    arr = _Arrays(model)
    c = write - read
    nt, ns = model.states
    bests: list[np.ndarray] = []
    prev = None
    prev_size = None
    if model.seed_length is not None:
        prev = np.full((nt, ns), INF)
        prev[0, 0] = 0.0
        prev_size = arr.size(model.seed_length)
    for i, length in enumerate(model.lengths):
        size = arr.size(length)
        valid = arr.valid(i)
        if cap is not None:
            valid &= size <= cap
        full = np.zeros((nt, ns), dtype=bool)
        full[min(model.t_elig[i], nt - 1), min(model.s_elig[i], ns - 1)] = True
        if prev is None:
            allowed = valid
            if trigger is not None:
                start = np.zeros((nt, ns), dtype=bool)
                start[0, 0] = True
                allowed &= start if size[0, 0] <= trigger else (size <= trigger) | full
            best = np.where(allowed, write * size, INF)
        else:
            assert prev_size is not None
            over = size > trigger if trigger is not None else None
            same = prev + read * prev_size + write * (size - prev_size)
            src = prev if over is None else np.where(over, prev, INF)
            changed = np.full((nt, ns), INF)
            if ns > 1:
                changed = np.minimum(changed, _shift_cummin(src[:, : ns - 1] - c * arr.P1, 1))
            if nt > 1:
                changed = np.minimum(changed, _shift_cummin(src[: nt - 1, :] - c * arr.P2, 0))
            if nt > 1 and ns > 1:
                corner = np.minimum.accumulate(
                    np.minimum.accumulate(src[: nt - 1, : ns - 1] - c * arr.P3, axis=0), axis=1
                )
                changed[1:, 1:] = np.minimum(changed[1:, 1:], corner)
            changed = changed + write * size
            if over is not None:
                assert trigger is not None
                # Over the trigger the gate must act, unless nothing is left.
                same = np.where(over & ~full, INF, same)
                changed = np.where((size <= trigger) | full, changed, INF)
            best = np.where(valid, np.minimum(same, changed), INF)
        bests.append(best)
        prev, prev_size = best, size
    final = bests[-1]
    state = np.unravel_index(int(np.argmin(final)), final.shape)
    value = float(final[state])
    schedule = _backtrack(model, arr, bests, (int(state[0]), int(state[1])), read, write)
    return value, schedule


def _transition_costs(
    arr: _Arrays, i: int, state: tuple[int, int], read: float, write: float
) -> np.ndarray:
    """Cost of request ``i`` in ``state`` from every predecessor (t', s') <= state."""
    model = arr.model
    t, s = state
    length = model.lengths[i]
    prev_length = model.lengths[i - 1] if i > 0 else model.seed_length
    assert prev_length is not None
    size = arr.A[length] - arr.CT[t] - arr.CS[s]
    tp = np.array([*model.t_pos, 10**12], dtype=np.int64)
    sp = np.array([*model.s_pos, 10**12], dtype=np.int64)
    tt = np.arange(t + 1)[:, None]
    ss = np.arange(s + 1)[None, :]
    mt = np.where(tt < t, tp[np.minimum(tt, len(tp) - 1)], 10**12)
    ms = np.where(ss < s, sp[np.minimum(ss, len(sp) - 1)], 10**12)
    m = np.minimum(mt, ms)
    m_clip = np.minimum(m, len(model.raw))
    prefix = (
        arr.A[m_clip]
        - arr.CT[np.minimum(t, arr.nT[m_clip])]
        - arr.CS[np.minimum(s, arr.nS[m_clip])]
    )
    costs = read * prefix + write * (size - prefix)
    prev_size = arr.A[prev_length] - arr.CT[t] - arr.CS[s]
    costs[t, s] = read * prev_size + write * (size - prev_size)
    return costs


def _backtrack(
    model: ScheduleModel,
    arr: _Arrays,
    bests: list[np.ndarray],
    state: tuple[int, int],
    read: float,
    write: float,
) -> list[tuple[int, int]]:
    schedule = [state]
    for i in range(len(bests) - 1, 0, -1):
        t, s = state
        costs = _transition_costs(arr, i, state, read, write)
        total = bests[i - 1][: t + 1, : s + 1] + costs
        target = bests[i][t, s]
        hits = np.argwhere(np.isclose(total, target, rtol=1e-9, atol=1e-6))
        state = (int(hits[0][0]), int(hits[0][1]))
        schedule.append(state)
    schedule.reverse()
    return schedule


def evaluate(
    model: ScheduleModel,
    schedule: Sequence[tuple[int, int]],
    *,
    read: float = 0.1,
    write: float = 1.25,
) -> tuple[float, list[int], list[bool], list[int]]:
    """Cost, per-request tokens, busts and cache reads of ``schedule``,
    computed directly from row lists (no prefix-sum shortcut)."""

    def rows(length: int, state: tuple[int, int]) -> list[tuple[int, int]]:
        t, s = state
        out = []
        for r in range(length):
            tokens = model.raw[r]
            tokens -= sum(
                sv
                for k, (p, sv) in enumerate(zip(model.t_pos, model.t_save, strict=False))
                if p == r and k < t
            )
            tokens -= sum(
                sv
                for k, (p, sv) in enumerate(zip(model.s_pos, model.s_save, strict=False))
                if p == r and k < s
            )
            out.append((r, tokens))
        return out

    previous = rows(model.seed_length, (0, 0)) if model.seed_length is not None else None
    cost = 0.0
    tokens: list[int] = []
    busts: list[bool] = []
    reads: list[int] = []
    for length, state in zip(model.lengths, schedule, strict=True):
        current = rows(length, state)
        total = sum(tok for _, tok in current)
        shared = 0
        if previous is not None:
            for a, b in zip(previous, current, strict=False):
                if a != b:
                    break
                shared += 1
        read_tokens = sum(tok for _, tok in current[:shared])
        busts.append(previous is not None and shared < len(previous))
        cost += read * read_tokens + write * (total - read_tokens)
        tokens.append(total)
        reads.append(read_tokens)
        previous = current
    return cost, tokens, busts, reads


def brute_force(
    model: ScheduleModel,
    *,
    read: float = 0.1,
    write: float = 1.25,
    trigger: float | None = None,
) -> float:
    """The minimum of :func:`evaluate` over every sticky schedule (small models only)."""
    best = INF
    for schedule in _sticky_schedules(model):
        if trigger is not None and not _trigger_only(model, schedule, trigger):
            continue
        best = min(best, evaluate(model, schedule, read=read, write=write)[0])
    return best


def _sticky_schedules(model: ScheduleModel) -> Iterator[tuple[tuple[int, int], ...]]:
    """Every schedule whose (t, s) never decreases, and only those: the
    product of all per-request options is mostly decreasing schedules."""
    count = len(model.lengths)
    schedule: list[tuple[int, int]] = []

    def extend(i: int, t_from: int, s_from: int) -> Iterator[tuple[tuple[int, int], ...]]:
        if i == count:
            yield tuple(schedule)
            return
        for t in range(t_from, model.t_elig[i] + 1):
            for s in range(s_from, model.s_elig[i] + 1):
                schedule.append((t, s))
                yield from extend(i + 1, t, s)
                schedule.pop()

    return extend(0, 0, 0)


def _trigger_only(
    model: ScheduleModel, schedule: Sequence[tuple[int, int]], trigger: float
) -> bool:
    """Whether a gate that acts only over ``trigger`` could produce ``schedule``."""
    sums = [sum(model.raw[:n]) for n in range(len(model.raw) + 1)]

    def size(i: int, state: tuple[int, int]) -> float:
        t, s = state
        return sums[model.lengths[i]] - sum(model.t_save[:t]) - sum(model.s_save[:s])

    prev = (0, 0)
    for i, state in enumerate(schedule):
        full = (model.t_elig[i], model.s_elig[i])
        if size(i, prev) <= trigger:
            if state != prev:
                return False
        elif state != full and (state == prev or size(i, state) > trigger):
            return False
        prev = state
    return True


def anchor_result(
    name: str, model: ScheduleModel, schedule: Sequence[tuple[int, int]], note: str
) -> VariantResult:
    _cost, tokens, busts, reads = evaluate_fast(model, schedule)
    result = VariantResult(name, kind="anchor", note=note)
    result.input_tokens = tokens
    result.busts = busts
    result.cache_read = reads
    result.cache_write = [t - r for t, r in zip(tokens, reads, strict=True)]
    return result


def evaluate_fast(
    model: ScheduleModel, schedule: Sequence[tuple[int, int]]
) -> tuple[float, list[int], list[bool], list[int]]:
    """:func:`evaluate` through the prefix sums (fast enough for 300 requests)."""
    arr = _Arrays(model)
    tokens: list[int] = []
    busts: list[bool] = []
    reads: list[int] = []
    prev: tuple[int, int] | None = (0, 0) if model.seed_length is not None else None
    prev_length = model.seed_length
    for length, state in zip(model.lengths, schedule, strict=True):
        t, s = state
        size = int(arr.A[length] - arr.CT[t] - arr.CS[s])
        if prev is None:
            read = 0
            bust = False
        elif prev == state:
            assert prev_length is not None
            read = int(arr.A[prev_length] - arr.CT[t] - arr.CS[s])
            bust = False
        else:
            changed = [model.t_pos[k] for k in range(prev[0], t)] + [
                model.s_pos[k] for k in range(prev[1], s)
            ]
            m = min(changed)
            read = int(arr.A[m] - arr.CT[min(t, arr.nT[m])] - arr.CS[min(s, arr.nS[m])])
            bust = True
        tokens.append(size)
        busts.append(bust)
        reads.append(read)
        prev, prev_length = state, length
    cost = sum(0.1 * r + 1.25 * (t - r) for t, r in zip(tokens, reads, strict=True))
    return cost, tokens, busts, reads
