"""What the page shows of one session, computed from its entries once and
cached until the session grows: the condensed tree, the selected branch,
its messages by page, the timeline, the costs, memory and checkpoints."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import Any, cast

from prism.attention.calibration_entry import calibration_rows
from prism.branching import branch_entries, labels
from prism.contracts import SessionEntry
from prism.inspect.costs import BranchCosts, branch_costs
from prism.inspect.timeline import Step, describe_step, fold_timeline

# Entries as read back from a store, possibly written by another tool.
Entry = Mapping[str, Any]

__all__ = ["SessionView", "page_bounds", "without_gc"]

TREE_NODE_LIMIT = 2_000


@contextmanager
def without_gc() -> Iterator[None]:
    """Run a pass over a long branch with the cycle collector paused. The
    pass makes no cycles, but its allocations trigger full collections that
    walk every entry the store holds (seconds on a 100,000-entry file)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def page_bounds(total: int, offset: int | None, limit: int) -> tuple[int, int]:
    """``[start, end)`` of a page; no offset means the last page."""
    limit = max(1, min(limit, 500))
    if offset is None:
        start = max(0, total - limit)
    else:
        start = max(0, min(offset, total))
    return start, min(total, start + limit)


def _preview(entry: Mapping[str, Any]) -> str:
    kind = entry.get("kind")
    if kind == "message":
        message = entry["message"]
        for block in message.get("content") or ():
            if block.get("type") == "text":
                text = " ".join(str(block.get("text", "")).split())
                return f"{message.get('role')}: {text[:60]}"
            if block.get("type") == "tool_call":
                return f"{message.get('role')}: → {block.get('name')}"
            if block.get("type") == "tool_result":
                return f"tool: {block.get('name')}"
        return str(message.get("role"))
    if kind == "custom":
        return f"custom: {entry.get('customType')}"
    if kind == "compaction":
        return "compaction"
    return str(kind)


class SessionView:
    """One session's entries (append order) seen from one leaf."""

    def __init__(
        self, session_id: str, entries: Sequence[Entry], leaf_id: str | None = None
    ) -> None:
        self.session_id = session_id
        self.entries = entries
        if leaf_id is not None and not any(e["id"] == leaf_id for e in entries):
            leaf_id = None
        self.leaf_id = leaf_id or (entries[-1]["id"] if entries else None)

    @cached_property
    def branch(self) -> Sequence[Entry]:
        entries = cast("Sequence[SessionEntry]", self.entries)
        with without_gc():
            return branch_entries(entries, self.leaf_id) if self.leaf_id else []

    @cached_property
    def branch_index(self) -> dict[str, int]:
        with without_gc():
            return {e["id"]: i for i, e in enumerate(self.branch)}

    @cached_property
    def costs(self) -> BranchCosts:
        with without_gc():
            return branch_costs(self.branch)

    @cached_property
    def timeline(self) -> list[Step]:
        with without_gc():
            return fold_timeline(self.branch)

    @cached_property
    def timeline_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for step in self.timeline:
            counts[step.kind] = counts.get(step.kind, 0) + 1
        return counts

    def timeline_steps(self, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        steps = self.timeline
        end = len(steps) if end is None else end
        return [describe_step(i, steps[i], self.branch) for i in range(start, end)]

    def summary(self) -> dict[str, Any]:
        last = self.entries[-1] if self.entries else None
        totals = self.costs.totals()
        return {
            "id": self.session_id,
            "entries": len(self.entries),
            "branchEntries": len(self.branch),
            "lastActivity": last.get("createdAt") if last else None,
            "lastEntryId": last["id"] if last else None,
            "cost": totals["cacheAwareCost"],
            "turns": totals["requests"],
        }

    def tree(self) -> dict[str, Any]:
        """The condensed tree (computed once per view)."""
        return self._tree

    @cached_property
    def _tree(self) -> dict[str, Any]:
        with without_gc():
            return self._build_tree()

    def _build_tree(self) -> dict[str, Any]:
        """Roots, forks, branch starts, leaves, labels and compactions, each
        linked to its nearest shown ancestor; linear runs between them are
        counted, not listed (a 100,000-entry chain is a handful of nodes)."""
        children: dict[str | None, int] = {}
        parent_of = {e["id"]: e["parentId"] for e in self.entries}
        for entry in self.entries:
            children[entry["parentId"]] = children.get(entry["parentId"], 0) + 1
        label_of = labels(cast("Sequence[SessionEntry]", self.entries))
        on_branch = self.branch_index
        shown: list[Entry] = []
        for entry in self.entries:
            parent = entry["parentId"]
            if (
                parent is None
                or children.get(entry["id"], 0) != 1
                or children.get(parent, 0) > 1
                or entry["kind"] == "compaction"
                or entry["id"] in label_of
            ):
                shown.append(entry)
        shown_ids = {e["id"] for e in shown}
        nodes = []
        for entry in shown[-TREE_NODE_LIMIT:]:
            hidden, parent = 0, entry["parentId"]
            while parent is not None and parent not in shown_ids and parent in parent_of:
                hidden += 1
                parent = parent_of[parent]
            nodes.append(
                {
                    "id": entry["id"],
                    "parent": parent,
                    "hidden": hidden,
                    "kind": entry["kind"],
                    "preview": _preview(entry),
                    "label": label_of.get(entry["id"]),
                    "children": children.get(entry["id"], 0),
                    "onBranch": entry["id"] in on_branch,
                    "leaf": children.get(entry["id"], 0) == 0,
                    "at": entry.get("createdAt"),
                }
            )
        return {
            "nodes": nodes,
            "leafId": self.leaf_id,
            "truncated": max(0, len(shown) - TREE_NODE_LIMIT),
        }

    def messages(self, offset: int | None, limit: int, around: str | None = None) -> dict[str, Any]:
        """A page of the branch's entries (messages and the records between them)."""
        branch = self.branch
        if around is not None and around in self.branch_index:
            offset = max(0, self.branch_index[around] - limit // 2)
        start, end = page_bounds(len(branch), offset, limit)
        return {"total": len(branch), "offset": start, "entries": list(branch[start:end])}

    def timeline_page(self, offset: int | None, limit: int) -> dict[str, Any]:
        start, end = page_bounds(len(self.timeline), offset, limit)
        return {
            "total": len(self.timeline),
            "offset": start,
            "steps": self.timeline_steps(start, end),
            "counts": self.timeline_counts,
        }

    def cost_report(self) -> dict[str, Any]:
        return {
            "totals": self.costs.totals(),
            "turns": [t.to_json() for t in self.costs.turns],
            "calibration": self.calibration,
        }

    @cached_property
    def calibration(self) -> list[dict[str, Any]]:
        """The token calibration per model, as the branch's newest record
        says (docs/attention.md): ratios by kind, samples seen, scale, the
        last turn's error; a damaged record is a row with ``problem``."""
        with without_gc():
            return calibration_rows(self.branch)

    def memory(self) -> dict[str, Any]:
        """Observations and reflections with the entries they cite; a cited
        entry not on this branch is listed as missing, never fetched."""
        records: list[dict[str, Any]] = []
        for entry in self.branch:
            if entry["kind"] != "custom" or not str(entry.get("customType", "")).startswith("om."):
                continue
            data = entry.get("data")
            if not isinstance(data, Mapping):
                continue
            for key, kind in (("observations", "observation"), ("reflections", "reflection")):
                for item in data.get(key) or ():
                    if not isinstance(item, Mapping):
                        continue
                    sources = [str(s) for s in item.get("sourceEntryIds") or ()]
                    records.append(
                        {
                            "kind": kind,
                            "id": item.get("id"),
                            "content": item.get("content"),
                            "recordEntryId": entry["id"],
                            "sources": [s for s in sources if s in self.branch_index],
                            "missingSources": [s for s in sources if s not in self.branch_index],
                            "observationIds": list(item.get("observationIds") or ()),
                        }
                    )
            for dropped in data.get("observationIds") or ():
                records.append({"kind": "dropped", "id": dropped, "recordEntryId": entry["id"]})
        return {"records": records}

    def checkpoints(self) -> dict[str, Any]:
        """Durable runs on the branch, each with its checkpoints and state."""
        runs: dict[str, dict[str, Any]] = {}
        for entry in self.branch:
            if entry["kind"] != "custom" or entry.get("customType") != "prism.checkpoint":
                continue
            data = entry.get("data")
            if not isinstance(data, Mapping):
                continue
            run_id = str(data.get("runId", "?"))
            run = runs.setdefault(run_id, {"runId": run_id, "checkpoints": [], "state": "running"})
            run["checkpoints"].append(
                {
                    "entryId": entry["id"],
                    "at": entry.get("createdAt"),
                    "step": data.get("step"),
                    "phase": data.get("phase"),
                    "status": data.get("status"),
                    "pendingToolCalls": [
                        c.get("name")
                        for c in data.get("pendingToolCalls") or ()
                        if isinstance(c, Mapping)
                    ],
                    "engine": data.get("engine"),
                }
            )
            if data.get("phase") == "end":
                run["state"] = str(data.get("status", "completed"))
        for run in runs.values():
            if run["state"] == "running":
                run["state"] = "unfinished (resumable)"
        return {"runs": list(runs.values())}
