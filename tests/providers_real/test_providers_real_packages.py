"""Provider presets: metadata, auth descriptors, policies, and that each one
talks to its own endpoint through the compatible adapter."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from providers_real_support import Recorder, chunk, collect, sse_lines, sse_response

from prism.errors import ConfigError, UnknownNameError
from prism.providers.packages import (
    KIMI_PACKAGE,
    OPENAI_PACKAGE,
    PROVIDER_PRESETS,
    create_kimi_provider,
    create_neuralwatt_provider,
    create_openai_provider,
    create_opencode_go_provider,
    create_openrouter_provider,
    create_zai_provider,
    estimate_cost,
    get_provider_preset,
    with_overrides,
)
from prism.security import NOOP_REDACTOR

pytestmark = pytest.mark.anyio

FACTORIES = {
    "openai": create_openai_provider,
    "openrouter": create_openrouter_provider,
    "zai": create_zai_provider,
    "kimi": create_kimi_provider,
    "opencode-go": create_opencode_go_provider,
    "neuralwatt": create_neuralwatt_provider,
}
OK = sse_lines([chunk(content="ok", finish="stop")])


def _client(recorder: Recorder) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(recorder))


def _thinking_request(provider: str, model: str) -> dict[str, Any]:
    return {
        "model": {"provider": provider, "model": model},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "text": "pondering"},
                    {"type": "text", "text": "a"},
                ],
            },
            {"role": "user", "content": [{"type": "text", "text": "q2"}]},
        ],
    }


def test_the_preset_names_the_cli_accepts() -> None:
    assert sorted(PROVIDER_PRESETS) == [
        "kimi",
        "neuralwatt",
        "openai",
        "opencode-go",
        "openrouter",
        "zai",
    ]
    assert set(FACTORIES) == set(PROVIDER_PRESETS)


@pytest.mark.parametrize("name", sorted(PROVIDER_PRESETS))
def test_model_metadata_is_complete(name: str) -> None:
    package = get_provider_preset(name)
    assert package.base_url.startswith("https://")
    assert package.auth.env_vars and all(v.isupper() for v in package.auth.env_vars)
    assert package.model()["model"] == package.default_model
    for model in package.models:
        assert model["provider"] == name
        limits, pricing = model["limits"], model["pricing"]
        assert limits["contextWindow"] > limits["maxOutputTokens"] > 0
        assert {"input", "output", "cacheRead"} <= set(pricing)
        assert all(price >= 0 for price in pricing.values())


def test_unknown_names() -> None:
    with pytest.raises(
        UnknownNameError, match="unknown provider preset 'acme'; known: kimi, neuralwatt, openai"
    ):
        get_provider_preset("acme")
    with pytest.raises(UnknownNameError, match="unknown model 'gpt-0' for provider 'openai'"):
        OPENAI_PACKAGE.model("gpt-0")
    assert OPENAI_PACKAGE.model_or_custom("gpt-next") == {"provider": "openai", "model": "gpt-next"}


@pytest.mark.parametrize("name", sorted(PROVIDER_PRESETS))
async def test_each_preset_reads_its_key_from_the_env_mapping_and_posts_to_its_url(
    name: str,
) -> None:
    package = PROVIDER_PRESETS[name]
    recorder = Recorder(lambda: sse_response(OK))
    env = {package.auth.env_vars[0]: f"sk-{name}-canary"}
    provider = FACTORIES[name](env=env, http_client=_client(recorder), redactor=NOOP_REDACTOR)
    assert provider.name == name
    assert provider.models == package.models
    events = await collect(
        provider,
        {
            "model": package.model(),
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        },
    )
    assert events[-1]["type"] == "done"
    sent = recorder.requests[0]
    assert str(sent.url) == package.base_url + "/chat/completions"
    assert sent.headers["authorization"] == f"Bearer sk-{name}-canary"
    assert recorder.bodies[0]["model"] == package.default_model


@pytest.mark.parametrize("name", sorted(PROVIDER_PRESETS))
def test_a_preset_without_any_credential_source_says_what_to_pass(name: str) -> None:
    env_var = PROVIDER_PRESETS[name].auth.env_vars[0]
    with pytest.raises(ConfigError, match=f"{name} needs a credential: .*{env_var}"):
        FACTORIES[name](redactor=NOOP_REDACTOR)


async def test_missing_env_var_is_a_credential_error_event_naming_it() -> None:
    recorder = Recorder(lambda: sse_response(OK))
    provider = create_openai_provider(env={}, http_client=_client(recorder), redactor=NOOP_REDACTOR)
    events = await collect(provider, _thinking_request("openai", "gpt-4.1-mini"))
    assert recorder.requests == []
    assert events == [
        {
            "type": "error",
            "error": {
                "message": "openai: no credential: tried env OPENAI_API_KEY",
                "code": "credential_error",
                "retryable": False,
            },
        }
    ]


async def test_kimi_falls_back_to_its_second_env_name_and_explicit_key_wins() -> None:
    recorder = Recorder(lambda: sse_response(OK))
    provider = create_kimi_provider(
        env={"KIMI_API_KEY": "sk-kimi"}, http_client=_client(recorder), redactor=NOOP_REDACTOR
    )
    await collect(provider, _thinking_request("kimi", "kimi-k2-0905-preview"))
    assert recorder.requests[0].headers["authorization"] == "Bearer sk-kimi"
    provider = create_kimi_provider(
        "sk-explicit",
        env={"MOONSHOT_API_KEY": "sk-env"},
        http_client=_client(recorder),
        redactor=NOOP_REDACTOR,
    )
    await collect(provider, _thinking_request("kimi", "kimi-k2-0905-preview"))
    assert recorder.requests[1].headers["authorization"] == "Bearer sk-explicit"
    assert KIMI_PACKAGE.auth.env_vars == ("MOONSHOT_API_KEY", "KIMI_API_KEY")


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("zai", "reasoning_content"),
        ("kimi", "reasoning_content"),
        ("opencode-go", "reasoning_content"),
        ("neuralwatt", "reasoning_content"),
    ],
)
async def test_presets_that_take_reasoning_back_send_thinking(name: str, field: str) -> None:
    recorder = Recorder(lambda: sse_response(OK))
    provider = FACTORIES[name]("sk-x", http_client=_client(recorder), redactor=NOOP_REDACTOR)
    await collect(provider, _thinking_request(name, PROVIDER_PRESETS[name].default_model))
    assert recorder.bodies[0]["messages"][1][field] == "pondering"


@pytest.mark.parametrize("name", ["openai", "openrouter"])
async def test_presets_that_take_no_reasoning_omit_thinking_on_purpose(name: str) -> None:
    recorder = Recorder(lambda: sse_response(OK))
    provider = FACTORIES[name]("sk-x", http_client=_client(recorder), redactor=NOOP_REDACTOR)
    await collect(provider, _thinking_request(name, PROVIDER_PRESETS[name].default_model))
    assistant = recorder.bodies[0]["messages"][1]
    assert assistant == {"role": "assistant", "content": "a"}


async def test_openai_uses_max_completion_tokens_and_session_cache_key() -> None:
    recorder = Recorder(lambda: sse_response(OK))
    provider = create_openai_provider("sk-x", http_client=_client(recorder), redactor=NOOP_REDACTOR)
    request = _thinking_request("openai", "gpt-4.1-mini")
    request["options"] = {"maxTokens": 100}
    request["metadata"] = {"sessionId": "s-1"}
    await collect(provider, request)
    body = recorder.bodies[0]
    assert body["max_completion_tokens"] == 100
    assert body["prompt_cache_key"] == "s-1"


async def test_openrouter_attribution_headers() -> None:
    recorder = Recorder(lambda: sse_response(OK))
    provider = create_openrouter_provider(
        "sk-x",
        app_url="https://app.example",
        app_name="Demo",
        http_client=_client(recorder),
        redactor=NOOP_REDACTOR,
    )
    await collect(provider, _thinking_request("openrouter", "openai/gpt-4.1-mini"))
    headers = recorder.requests[0].headers
    assert headers["http-referer"] == "https://app.example"
    assert headers["x-title"] == "Demo"


async def test_base_url_and_name_overrides() -> None:
    recorder = Recorder(lambda: sse_response(OK))
    provider = create_zai_provider(
        "sk-x",
        base_url="https://proxy.example/v4",
        name="zai-proxy",
        http_client=_client(recorder),
        redactor=NOOP_REDACTOR,
    )
    await collect(provider, _thinking_request("zai-proxy", "glm-4.6"))
    assert str(recorder.requests[0].url) == "https://proxy.example/v4/chat/completions"
    assert provider.name == "zai-proxy"
    assert {m["provider"] for m in provider.models} == {"zai-proxy"}
    moved = with_overrides(OPENAI_PACKAGE, base_url="https://gateway.example/v1")
    assert (
        moved.base_url == "https://gateway.example/v1" and OPENAI_PACKAGE.base_url != moved.base_url
    )


def test_package_create_and_validation() -> None:
    provider = OPENAI_PACKAGE.create(api_key="sk-x", redactor=NOOP_REDACTOR)
    assert provider.url == "https://api.openai.com/v1/chat/completions"
    with pytest.raises(ConfigError, match="api_key must be a non-empty string"):
        create_openai_provider("", redactor=NOOP_REDACTOR)
    with pytest.raises(ConfigError, match="default_model 'nope' is not listed"):
        with_overrides(OPENAI_PACKAGE, default_model="nope")


def test_estimate_cost_bills_cached_tokens_at_the_cache_price() -> None:
    pricing = OPENAI_PACKAGE.model("gpt-4.1")["pricing"]  # input 2.0, output 8.0, cacheRead 0.5
    usage = {"inputTokens": 1_000_000, "cacheReadTokens": 600_000, "outputTokens": 100_000}
    assert estimate_cost(usage, pricing) == pytest.approx(0.4 * 2.0 + 0.6 * 0.5 + 0.1 * 8.0)
    assert estimate_cost({}, pricing) == 0.0
