from __future__ import annotations

import copy
from typing import Any

import pytest

from prism.config import ConfigLayer, merge_config_layers
from prism.errors import ConfigError


def test_deep_merge_in_order_arrays_and_scalars_replaced() -> None:
    defaults = ConfigLayer(
        "defaults",
        {
            "model": {"provider": "mock", "options": {"temperature": 0.2, "top": 1}},
            "tools": ["a", "b"],
        },
    )
    user = ConfigLayer("user", {"model": {"options": {"temperature": 0.7}}, "tools": ["c"]})
    runtime = ConfigLayer("runtime", {"model": {"provider": "openai"}, "debug": True})
    assert merge_config_layers([defaults, user, runtime]) == {
        "model": {"provider": "openai", "options": {"temperature": 0.7, "top": 1}},
        "tools": ["c"],
        "debug": True,
    }


def test_object_replaces_scalar_and_scalar_replaces_object() -> None:
    merged = merge_config_layers(
        [ConfigLayer("a", {"x": 1, "y": {"z": 1}}), ConfigLayer("b", {"x": {"k": 2}, "y": None})]
    )
    assert merged == {"x": {"k": 2}, "y": None}


def test_inputs_never_mutated_and_result_not_shared() -> None:
    first: dict[str, Any] = {"a": {"b": [1, {"c": 2}]}}
    second: dict[str, Any] = {"a": {"d": 3}}
    snapshot = copy.deepcopy((first, second))
    merged = merge_config_layers([ConfigLayer("1", first), ConfigLayer("2", second)])
    merged["a"]["b"][1]["c"] = 99
    merged["a"]["d"] = 100
    assert (first, second) == snapshot


def test_plain_mapping_layers_accepted() -> None:
    assert merge_config_layers([{"name": "n", "data": {"a": 1}}]) == {"a": 1}
    assert merge_config_layers([]) == {}


@pytest.mark.parametrize(
    ("layer", "message"),
    [
        (
            {"name": "x", "data": [1]},
            "config layer #1: config layer 'x' must be a JSON object, got array",
        ),
        ({"name": "x", "data": "s"}, "must be a JSON object, got string"),
        ({"name": "", "data": {}}, "config layer name must be a non-empty string"),
        ({"name": "x", "data": {}, "extra": 1}, "unknown keys: extra"),
        (["not", "a", "layer"], "config layer #1 is array, not a ConfigLayer"),
        ({"name": "x", "data": {"fn": print}}, "config layer 'x': fn is a callable, not JSON data"),
        (
            {"name": "x", "data": {"a": {"b": [1, float("nan")]}}},
            r"a\.b\[1\] is not a finite number",
        ),
        ({"name": "x", "data": {"a": {1: 2}}}, "a has a non-string key of type int"),
    ],
)
def test_bad_layers_refused_without_partial_result(layer: Any, message: str) -> None:
    good: dict[str, Any] = {"name": "ok", "data": {"a": 1}}
    snapshot = copy.deepcopy(good)
    with pytest.raises(ConfigError, match=message):
        merge_config_layers([good, layer])
    assert good == snapshot


def test_layers_argument_must_be_a_list() -> None:
    with pytest.raises(ConfigError, match="takes a list of layers"):
        merge_config_layers({"name": "x", "data": {}})  # type: ignore[dict-item]


def test_config_layer_construction_checks() -> None:
    with pytest.raises(ConfigError, match="must be a JSON object, got null"):
        ConfigLayer("x", None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="a config layer must be an object"):
        ConfigLayer.from_json([])
