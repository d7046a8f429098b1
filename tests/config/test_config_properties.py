from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from prism.config import ConfigLayer, merge_config_layers, validate_package_manifest
from prism.errors import ManifestError

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=5)


def reference_merge(layers: list[dict[str, Any]]) -> dict[str, Any]:
    def merge(a: Any, b: Any) -> Any:
        if isinstance(a, dict) and isinstance(b, dict):
            out = dict(a)
            for key, value in b.items():
                out[key] = merge(a[key], value) if key in a else value
            return out
        return b

    result: dict[str, Any] = {}
    for layer in layers:
        result = merge(result, layer)
    return result


@settings(max_examples=200, deadline=None)
@given(st.lists(json_objects, max_size=4))
def test_merge_matches_reference_and_never_mutates(layers: list[dict[str, Any]]) -> None:
    snapshot = copy.deepcopy(layers)
    merged = merge_config_layers([ConfigLayer(f"l{i}", layer) for i, layer in enumerate(layers)])
    assert merged == reference_merge(snapshot)
    assert layers == snapshot


@settings(max_examples=300, deadline=None)
@given(json_values | json_objects)
def test_manifest_validation_only_ever_raises_manifest_error(data: Any) -> None:
    try:
        validate_package_manifest(data)
    except ManifestError as error:
        assert str(error)
