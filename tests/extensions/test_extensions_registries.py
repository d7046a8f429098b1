from __future__ import annotations

import pytest

from prism.errors import (
    ConfigError,
    DuplicateContributionError,
    RegistryClosedError,
    UnknownNameError,
)
from prism.registries import (
    CONTRIBUTION_KINDS,
    ContributionRegistry,
    create_contribution_registries,
)


def test_register_resolve_list_in_order() -> None:
    registry: ContributionRegistry[int] = ContributionRegistry("tool")
    registry.register("b", 2)
    registry.register("a", 1)
    assert registry.resolve("a") == 1
    assert registry.names() == ["b", "a"]
    assert registry.list() == [2, 1]
    assert registry.items() == [("b", 2), ("a", 1)]
    assert registry.has("a") and "a" in registry and len(registry) == 2
    assert not registry.has("zz") and registry.get("zz") is None


def test_duplicate_name_refused_and_first_value_kept() -> None:
    registry: ContributionRegistry[str] = ContributionRegistry("tool")
    registry.register("echo", "first")
    with pytest.raises(DuplicateContributionError, match="tool 'echo' is already registered"):
        registry.register("echo", "second")
    assert registry.resolve("echo") == "first"
    assert len(registry) == 1


def test_unknown_name_error_lists_registered_names_not_values() -> None:
    registry: ContributionRegistry[str] = ContributionRegistry("provider")
    registry.register("mock", "sk-secret-value-123")
    with pytest.raises(UnknownNameError) as info:
        registry.resolve("mokc")
    message = str(info.value)
    assert message == "unknown provider 'mokc'; registered: 'mock'"
    assert "sk-secret" not in message


def test_unknown_name_in_empty_registry_and_non_string() -> None:
    registry: ContributionRegistry[int] = ContributionRegistry("skill")
    with pytest.raises(UnknownNameError, match="unknown skill 'x'; none are registered"):
        registry.resolve("x")
    with pytest.raises(UnknownNameError, match="unknown skill name"):
        registry.resolve(42)  # type: ignore[arg-type]


def test_unknown_name_lists_at_most_twenty_names() -> None:
    registry: ContributionRegistry[int] = ContributionRegistry("tool")
    for i in range(25):
        registry.register(f"t{i}", i)
    with pytest.raises(UnknownNameError, match=r"and 5 more$"):
        registry.resolve("nope")


@pytest.mark.parametrize("bad", ["", " padded", "tab\tname", 7, None, "x" * 201])
def test_invalid_names_refused(bad: object) -> None:
    registry: ContributionRegistry[int] = ContributionRegistry("tool")
    with pytest.raises(ConfigError, match="tool name"):
        registry.register(bad, 1)  # type: ignore[arg-type]
    assert len(registry) == 0


def test_freeze_refuses_late_registration_and_removal() -> None:
    registry: ContributionRegistry[int] = ContributionRegistry("command")
    registry.register("a", 1)
    registry.freeze()
    with pytest.raises(
        RegistryClosedError, match="cannot register command: the command registry is closed"
    ):
        registry.register("b", 2)
    with pytest.raises(RegistryClosedError):
        registry.unregister("a")
    assert registry.names() == ["a"] and registry.frozen


def test_unregister_unknown_name() -> None:
    registry: ContributionRegistry[int] = ContributionRegistry("tool")
    with pytest.raises(UnknownNameError):
        registry.unregister("missing")


def test_bundle_has_every_kind_and_is_independent_per_host() -> None:
    first = create_contribution_registries()
    second = create_contribution_registries()
    first.tools.register("echo", object())
    assert not second.tools.has("echo")
    assert set(CONTRIBUTION_KINDS) == {
        "tool",
        "provider",
        "model",
        "compactionStrategy",
        "retryPolicy",
        "inputBuilder",
        "promptBuilder",
        "contextProvider",
        "skill",
        "command",
    }
    for kind in CONTRIBUTION_KINDS:
        assert first.by_kind(kind) is getattr(first, CONTRIBUTION_KINDS[kind])
    assert first.by_kind("compactionStrategy") is first.compaction_strategies
    with pytest.raises(UnknownNameError, match="unknown contribution kind 'widget'"):
        first.by_kind("widget")
    assert first.summary() == {"tool": ["echo"]}


def test_bundle_freeze_closes_every_registry() -> None:
    registries = create_contribution_registries()
    registries.freeze()
    assert registries.frozen
    for registry in registries.all():
        with pytest.raises(RegistryClosedError):
            registry.register("x", 1)


def test_registration_is_inert() -> None:
    calls: list[str] = []

    def tool() -> None:
        calls.append("ran")

    registries = create_contribution_registries()
    registries.tools.register("t", tool)
    registries.commands.register("c", tool)
    assert registries.tools.resolve("t") is tool
    assert calls == []
