"""Properties of the pure utilities on generated ledgers and session trees:
folding is order-stable, and recall/projection never cross branches."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from prism.branching import branch_entries, list_leaves
from prism.memory import (
    build_observational_memory_projection,
    create_memory_id,
    fold_observational_memory_ledger,
    is_memory_id,
    recall_observational_memory,
)
from prism.security import NOOP_REDACTOR

MEMORY_IDS = [f"{i:012x}" for i in range(1, 13)]


def observation_entry(index: int, ids: list[str]) -> dict[str, Any]:
    return {
        "id": f"r{index}",
        "sessionId": "s",
        "parentId": None,
        "kind": "custom",
        "customType": "om.observations.recorded",
        "data": {
            "type": "om.observations.recorded",
            "observations": [
                {"id": i, "content": f"fact {i} from r{index}", "sourceEntryIds": [f"m{index}"]}
                for i in ids
            ],
            "coversUpToId": f"m{index}",
        },
    }


def drop_entry(index: int, ids: list[str]) -> dict[str, Any]:
    return {
        "id": f"d{index}",
        "sessionId": "s",
        "parentId": None,
        "kind": "custom",
        "customType": "om.observations.dropped",
        "data": {"type": "om.observations.dropped", "observationIds": ids},
    }


records = st.lists(
    st.tuples(st.booleans(), st.lists(st.sampled_from(MEMORY_IDS), max_size=4, unique=True)),
    max_size=12,
)


def build(spec: list[tuple[bool, list[str]]]) -> list[dict[str, Any]]:
    return [
        (drop_entry(i, ids) if is_drop else observation_entry(i, ids))
        for i, (is_drop, ids) in enumerate(spec)
    ]


@given(records, st.integers(min_value=0, max_value=12))
def test_folding_is_incremental_and_keeps_first_appearance_order(
    spec: list[tuple[bool, list[str]]], cut: int
) -> None:
    entries = build(spec)
    whole = fold_observational_memory_ledger(entries)
    stepwise = fold_observational_memory_ledger(entries[:cut]).fold(entries[cut:])
    assert stepwise.summary() == whole.summary()
    assert stepwise.observations == whole.observations
    first_seen: list[str] = []
    for is_drop, ids in spec:
        if not is_drop:
            first_seen.extend(i for i in ids if i not in first_seen)
    assert list(whole.observations) == first_seen
    # The first record of an id wins: a later reuse never rewrites memory.
    for memory_id, observation in whole.observations.items():
        assert observation["content"].endswith(str(whole.recorded_by(memory_id)))
    assert fold_observational_memory_ledger(entries).summary() == whole.summary()


@given(records, st.randoms(use_true_random=False))
def test_any_order_of_records_yields_the_same_memory_sets(
    spec: list[tuple[bool, list[str]]], rng: Any
) -> None:
    # Unique ids per record so content cannot depend on which copy came first.
    used: set[str] = set()
    unique: list[tuple[bool, list[str]]] = []
    for is_drop, ids in spec:
        if is_drop:
            unique.append((True, ids))
        else:
            fresh = [i for i in ids if i not in used]
            used.update(fresh)
            unique.append((False, fresh))
    entries = build(unique)
    shuffled = list(entries)
    rng.shuffle(shuffled)
    a = build_observational_memory_projection(entries, "active")
    b = build_observational_memory_projection(shuffled, "active")
    assert sorted(o["id"] for o in a.observations) == sorted(o["id"] for o in b.observations)
    assert sorted(a.dropped_observation_ids) == sorted(b.dropped_observation_ids)
    assert a.observation_tokens == b.observation_tokens
    # ...and the order follows the entries each time.
    order = [
        o["id"]
        for e in shuffled
        if e["kind"] == "custom" and "observations" in e["data"]
        for o in e["data"]["observations"]
    ]
    assert [o["id"] for o in b.observations] == [
        i for i in order if i not in b.dropped_observation_ids
    ]


def session_tree(parents: list[int], cites: list[int]) -> list[dict[str, Any]]:
    """Entry 2k is a message, entry 2k+1 a memory record hanging under it whose
    observation cites the message ``cites[k]`` (any message of the tree)."""
    entries: list[dict[str, Any]] = []
    for k, parent in enumerate(parents):
        message_id = f"m{k}"
        entries.append(
            {
                "id": message_id,
                "sessionId": "s",
                "parentId": None if parent < 0 else f"r{parent}",
                "kind": "message",
                "message": {"role": "user", "content": [{"type": "text", "text": f"text {k}"}]},
            }
        )
        record = observation_entry(k, [f"{k + 1:012x}"])
        record["parentId"] = message_id
        record["data"]["observations"][0]["sourceEntryIds"] = [f"m{cites[k] % len(parents)}"]
        entries.append(record)
    return entries


trees = st.lists(st.integers(min_value=-1, max_value=1000), min_size=1, max_size=20).flatmap(
    lambda raw: st.tuples(
        st.just([-1 if i == 0 or r < 0 else r % i for i, r in enumerate(raw)]),
        st.lists(st.integers(min_value=0, max_value=1000), min_size=len(raw), max_size=len(raw)),
    )
)


@settings(max_examples=60)
@given(trees)
def test_recall_and_projection_never_return_another_branch(
    tree: tuple[list[int], list[int]],
) -> None:
    parents, cites = tree
    everything = session_tree(parents, cites)
    all_memory_ids = [f"{k + 1:012x}" for k in range(len(parents))]
    for leaf in list_leaves(everything):
        branch = branch_entries(everything, leaf["id"])
        on_branch = {e["id"] for e in branch}
        projection = build_observational_memory_projection(everything, leaf_id=leaf["id"])
        for observation in projection.observations:
            assert f"r{int(observation['id'], 16) - 1}" in on_branch
        for memory_id in all_memory_ids:
            recalled = recall_observational_memory(
                everything, memory_id, leaf_id=leaf["id"], redactor=NOOP_REDACTOR
            )
            via_branch = recall_observational_memory(branch, memory_id, redactor=NOOP_REDACTOR)
            assert recalled == via_branch
            recorded_here = f"r{int(memory_id, 16) - 1}" in on_branch
            assert recalled.found is recorded_here
            for source in recalled.source_entries:
                assert source["id"] in on_branch
            if recalled.found:
                assert recalled.memory is not None
                cited = recalled.memory["sourceEntryIds"]  # type: ignore[typeddict-item]
                assert sorted(
                    recalled.missing_source_ids + [s["id"] for s in recalled.source_entries]
                ) == sorted(cited)


@given(st.integers(min_value=0, max_value=50))
def test_created_ids_are_memory_ids(_: int) -> None:
    memory_id = create_memory_id()
    assert is_memory_id(memory_id)
    assert len(memory_id) == 12
