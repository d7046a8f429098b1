"""The wire shapes of observational memory, with the original's camelCase keys.

Records are ``kind: "custom"`` session entries (``customType`` equals
``data.type``, so a reader keyed on either finds them):

- ``om.observations.recorded``: ``{type, observations: [Observation], coversUpToId?}``
- ``om.reflections.recorded``: ``{type, reflections: [Reflection], coversUpToId?}``
- ``om.observations.dropped``: ``{type, observationIds: [id], coversUpToId?}``

An Observation is ``{id, content, sourceEntryIds}``: a fact about the
session with the entry ids it was read from. A Reflection is ``{id, content,
observationIds}``: a consolidation of observations. Ids are memory ids
(12 lowercase hex). ``coversUpToId`` is a coverage marker: the last branch
entry (observer) or memory record (reflector, dropper) the worker had read.

A compaction entry made by the observational-memory strategy carries
``data.memory = {type: "om.folded", version: 1, fullFold, observations,
reflections, droppedObservationIds}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict

from prism.compaction.observational_memory.ids import is_memory_id

OBSERVATIONS_RECORDED = "om.observations.recorded"
REFLECTIONS_RECORDED = "om.reflections.recorded"
OBSERVATIONS_DROPPED = "om.observations.dropped"
FOLDED = "om.folded"
FOLDED_VERSION = 1
RECORD_TYPES = frozenset({OBSERVATIONS_RECORDED, REFLECTIONS_RECORDED, OBSERVATIONS_DROPPED})


class Observation(TypedDict):
    id: str
    content: str
    sourceEntryIds: list[str]


class Reflection(TypedDict):
    id: str
    content: str
    observationIds: list[str]


class ObservationsRecorded(TypedDict):
    type: Literal["om.observations.recorded"]
    observations: list[Observation]
    coversUpToId: NotRequired[str]


class ReflectionsRecorded(TypedDict):
    type: Literal["om.reflections.recorded"]
    reflections: list[Reflection]
    coversUpToId: NotRequired[str]


class ObservationsDropped(TypedDict):
    type: Literal["om.observations.dropped"]
    observationIds: list[str]
    coversUpToId: NotRequired[str]


class FoldedMemory(TypedDict):
    type: Literal["om.folded"]
    version: Literal[1]
    fullFold: bool
    observations: list[Observation]
    reflections: list[Reflection]
    droppedObservationIds: list[str]


def _id_list(value: object) -> list[str] | None:
    # A plain loop, not all(<genexpr>): this runs for every memory of a
    # 100k-entry branch and the generator costs more than the checks.
    if type(value) is not list:
        return None
    for item in value:
        if not isinstance(item, str):
            return None
    return value


def _as_dict(value: object) -> dict[str, Any] | None:
    if type(value) is dict:
        return value
    return dict(value) if isinstance(value, Mapping) else None


def parse_observation(value: object) -> Observation | None:
    """The observation when ``value`` has its shape, else None (skipped by
    readers). A well-formed dict is returned as it is, not copied: readers
    share the stored record's dicts, which Prism never mutates."""
    item = _as_dict(value)
    if (
        item is None
        or not is_memory_id(item.get("id"))
        or not isinstance(item.get("content"), str)
        or _id_list(item.get("sourceEntryIds")) is None
    ):
        return None
    return item  # type: ignore[return-value]


def parse_reflection(value: object) -> Reflection | None:
    """Like :func:`parse_observation`, for ``{id, content, observationIds}``."""
    item = _as_dict(value)
    if (
        item is None
        or not is_memory_id(item.get("id"))
        or not isinstance(item.get("content"), str)
        or _id_list(item.get("observationIds")) is None
    ):
        return None
    return item  # type: ignore[return-value]


def is_folded_memory(value: object) -> bool:
    """True for a compaction ``data.memory`` this package understands."""
    return (
        isinstance(value, Mapping)
        and value.get("type") == FOLDED
        and value.get("version") == FOLDED_VERSION
        and isinstance(value.get("fullFold"), bool)
        and isinstance(value.get("observations"), list)
        and isinstance(value.get("reflections"), list)
        and _id_list(value.get("droppedObservationIds")) is not None
    )


def record_entry(
    *,
    entry_id: str,
    session_id: str,
    parent_id: str | None,
    data: Mapping[str, Any],
    created_at: str | None = None,
) -> dict[str, Any]:
    """A ``custom`` session entry holding one memory record."""
    entry: dict[str, Any] = {
        "id": entry_id,
        "sessionId": session_id,
        "parentId": parent_id,
        "kind": "custom",
        "customType": data["type"],
        "data": dict(data),
    }
    if created_at is not None:
        entry["createdAt"] = created_at
    return entry


def observations_recorded(
    observations: Sequence[Observation], covers_up_to_id: str | None = None
) -> ObservationsRecorded:
    data: ObservationsRecorded = {
        "type": "om.observations.recorded",
        "observations": [dict(o) for o in observations],  # type: ignore[misc]
    }
    if covers_up_to_id is not None:
        data["coversUpToId"] = covers_up_to_id
    return data


def reflections_recorded(
    reflections: Sequence[Reflection], covers_up_to_id: str | None = None
) -> ReflectionsRecorded:
    data: ReflectionsRecorded = {
        "type": "om.reflections.recorded",
        "reflections": [dict(r) for r in reflections],  # type: ignore[misc]
    }
    if covers_up_to_id is not None:
        data["coversUpToId"] = covers_up_to_id
    return data


def observations_dropped(
    observation_ids: Sequence[str], covers_up_to_id: str | None = None
) -> ObservationsDropped:
    data: ObservationsDropped = {
        "type": "om.observations.dropped",
        "observationIds": list(observation_ids),
    }
    if covers_up_to_id is not None:
        data["coversUpToId"] = covers_up_to_id
    return data
