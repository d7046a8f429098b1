from __future__ import annotations

from typing import Any

import pytest

from prism.assembly import (
    Skill,
    SystemPromptLayer,
    compose_system_prompt,
    render_prompt_template,
    render_system_prompt,
    template_variables,
)
from prism.errors import ConfigError


def test_reference_example() -> None:
    rendered = render_prompt_template(
        "Review {{file}} for {{focus}}", {"file": "src/index.ts", "focus": "public exports"}
    )
    assert rendered == "Review src/index.ts for public exports"


def test_non_strings_are_sorted_compact_json() -> None:
    variables = {
        "obj": {"b": [1, 2], "a": {"z": None, "y": True}},
        "n": 1.5,
        "i": 3,
        "t": True,
        "f": False,
        "none": None,
        "arr": ["x", {"k": "v"}],
        "uni": {"é": "ü"},
    }
    out = render_prompt_template(
        "{{obj}}|{{n}}|{{i}}|{{t}}|{{f}}|{{none}}|{{arr}}|{{uni}}", variables
    )
    assert (
        out == '{"a":{"y":true,"z":null},"b":[1,2]}|1.5|3|true|false|null|["x",{"k":"v"}]|{"é":"ü"}'
    )


def test_whitespace_inside_braces_and_repeats() -> None:
    assert render_prompt_template("{{ a }}-{{a}}", {"a": "x"}) == "x-x"


def test_missing_throws_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="template variable 'focus' is missing") as caught:
        render_prompt_template("Review {{file}} for {{focus}}", {"file": "a"})
    assert caught.value.code == "template_variable_missing"


def test_missing_preserve_keeps_placeholder_as_written() -> None:
    assert render_prompt_template("{{a}} {{ b }}", {"a": 1}, missing="preserve") == "1 {{ b }}"


class Sneaky:
    secret = "hidden attribute"

    def __str__(self) -> str:
        return "str called"


@pytest.mark.parametrize(
    "template",
    ["{{a.b}}", "{{a['b']}}", "{{a | upper}}", "{{ 1 + 1 }}", "{{a()}}", "{{}}", "{a}"],
)
def test_expressions_are_left_literal(template: str) -> None:
    assert render_prompt_template(template, {"a": {"b": "leak"}}) == template


def test_dunder_names_are_plain_lookups() -> None:
    with pytest.raises(ConfigError, match="'__class__' is missing"):
        render_prompt_template("{{__class__}}", {"a": 1})

    class WithAttributes(dict[str, Any]):
        secret = "hidden attribute"

    with pytest.raises(ConfigError, match="'secret' is missing"):
        render_prompt_template("{{secret}}", WithAttributes())
    with pytest.raises(ConfigError, match="'keys' is missing"):
        render_prompt_template("{{keys}}", {"a": 1})
    assert render_prompt_template("{{__class__}}", {"__class__": "ok"}) == "ok"


def test_objects_are_not_stringified() -> None:
    with pytest.raises(ConfigError, match="template variable 'obj' is not JSON-compatible"):
        render_prompt_template("{{obj}}", {"obj": Sneaky()})
    with pytest.raises(ConfigError, match="'n' is not JSON-compatible"):
        render_prompt_template("{{n}}", {"n": float("nan")})


def test_substitution_is_single_pass() -> None:
    assert render_prompt_template("{{a}}", {"a": "{{b}}", "b": "no"}) == "{{b}}"


@pytest.mark.parametrize(
    ("template", "variables", "kwargs", "message"),
    [
        (3, {}, {}, "template must be a string"),
        ("x", [("a", 1)], {}, "variables must be a mapping"),
        ("x", {}, {"missing": "ignore"}, "missing must be 'throw' or 'preserve'"),
    ],
)
def test_bad_arguments(template: Any, variables: Any, kwargs: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        render_prompt_template(template, variables, **kwargs)


def test_template_variables_lists_names_once() -> None:
    assert template_variables("{{b}} {{a}} {{ b }} {{a.b}}") == ["b", "a"]


def test_system_layers_ordered_and_labeled() -> None:
    layers = [
        SystemPromptLayer("run", "Only this run."),
        SystemPromptLayer("user", "I prefer short answers."),
        SystemPromptLayer("package", "Tool rules.", name="demo-pkg"),
        SystemPromptLayer("app", "You are Demo."),
        SystemPromptLayer("app", "   "),
        SystemPromptLayer("package", "More rules."),
    ]
    assert compose_system_prompt(layers) == [
        {"label": "Package system prompt (demo-pkg)", "text": "Tool rules."},
        {"label": "Package system prompt", "text": "More rules."},
        {"label": "App system prompt", "text": "You are Demo."},
        {"label": "User system prompt", "text": "I prefer short answers."},
        {"label": "Run system prompt", "text": "Only this run."},
    ]
    rendered = render_system_prompt(layers)
    assert rendered.startswith("Package system prompt (demo-pkg):\nTool rules.\n\n")
    assert rendered.endswith("Run system prompt:\nOnly this run.")


def test_bad_layers_and_skills() -> None:
    with pytest.raises(ConfigError, match="layer kind must be one of"):
        SystemPromptLayer("global", "x")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="text must be a string"):
        SystemPromptLayer("app", None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be SystemPromptLayer"):
        compose_system_prompt(["app: x"])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="skill name"):
        Skill("")
    assert Skill("review", "Check tests.", "Code review").render() == (
        "Skill review: Code review\nCheck tests."
    )
    assert Skill("bare").render() == "Skill bare"
