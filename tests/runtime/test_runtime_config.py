"""create_agent validation: every bad option fails at construction with its name."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_helpers import MODEL

from prism.errors import ConfigError
from prism.providers import create_mock_provider, provider_done
from prism.retry import RetryOptions
from prism.runtime import create_agent

PROVIDER = create_mock_provider([provider_done()])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model": "demo"}, "model must be a dict"),
        ({"model": {"provider": "mock"}}, "model.model must be a non-empty string"),
        ({"provider": object()}, "provider must implement AIProvider"),
        ({"tools": "echo"}, "tools must be a list"),
        ({"max_tool_rounds": -1}, "max_tool_rounds must be an int >= 0"),
        ({"max_tool_rounds": True}, "max_tool_rounds must be an int >= 0"),
        ({"tool_concurrency": 0}, "tool_concurrency must be an int >= 1"),
        ({"middleware": {}}, "middleware must be a MiddlewareRegistry"),
        ({"system": 3}, "system must be a string or a list"),
        ({"retry": "yes"}, "retry must be RetryOptions"),
        ({"retry": {"maxAttempts": 0}}, "max_attempts must be an int >= 1"),
        ({"store": object()}, "store must implement SessionStore"),
        ({"secrets": [1]}, "secrets"),
        ({"sleep": 5}, "sleep must be an async callable"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, Any], message: str) -> None:
    kwargs: dict[str, Any] = {"model": MODEL, "provider": PROVIDER, **options}
    with pytest.raises(ConfigError, match=message):
        create_agent(**kwargs)


def test_config_is_frozen_and_normalized() -> None:
    agent = create_agent(model=MODEL, provider=PROVIDER, system="be brief", retry=True)
    assert agent.config.system == ("be brief",)
    assert isinstance(agent.config.retry, RetryOptions)
    assert agent.config.compaction is None
    with pytest.raises(AttributeError):
        agent.config.max_tool_rounds = 3  # type: ignore[misc]
    retry_json = create_agent(model=MODEL, provider=PROVIDER, retry={"maxAttempts": 5})
    assert retry_json.config.retry.max_attempts == 5


def test_unknown_or_missing_names_raise_type_error_naming_them() -> None:
    # The parameters are one TypedDict (AgentOptions): a typo is refused as
    # a keyword-only signature would refuse it, never silently ignored.
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['max_tool_round'\]"):
        create_agent(model=MODEL, provider=PROVIDER, max_tool_round=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"missing required keyword argument\(s\) \['model'\]"):
        create_agent(provider=PROVIDER)  # type: ignore[call-arg]


def test_agent_options_name_every_configured_field() -> None:
    from dataclasses import fields

    from prism.runtime import AgentConfig, AgentOptions

    # Every option lands on a config field (``redactor`` is built from secrets).
    config_fields = {f.name for f in fields(AgentConfig)} - {"redactor"}
    assert set(AgentOptions.__annotations__) == config_fields
    config = AgentConfig.build(model=MODEL, provider=PROVIDER, max_tool_rounds=2)
    assert config.max_tool_rounds == 2 and config.tool_concurrency == 1
