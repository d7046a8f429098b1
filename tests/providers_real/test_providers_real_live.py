"""Live smoke tests against real APIs. Opt-in only: set PRISM_LIVE_TESTS=1 and
the preset's key variable (e.g. OPENAI_API_KEY). Never run in CI; they cost
money and need the network. Optional PRISM_LIVE_MODEL_<PRESET> (e.g.
PRISM_LIVE_MODEL_OPENAI) picks a model other than the preset default."""

from __future__ import annotations

import os

import pytest

from prism.providers.packages import PROVIDER_PRESETS
from prism.security import NOOP_REDACTOR
from prism.testing import assert_no_secret_leak, assert_provider_stream_conforms

LIVE = os.environ.get("PRISM_LIVE_TESTS") == "1"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not LIVE, reason="live provider tests are opt-in (PRISM_LIVE_TESTS=1)"),
]


@pytest.mark.parametrize("name", sorted(PROVIDER_PRESETS))
async def test_live_preset_streams_a_short_answer(name: str) -> None:
    package = PROVIDER_PRESETS[name]
    # The test is the host here: it chooses to hand the process environment over.
    env = dict(os.environ)
    keys = [env[v] for v in package.auth.env_vars if env.get(v)]
    if not keys:
        pytest.skip(f"{name}: set {' or '.join(package.auth.env_vars)} to run")
    provider = package.create(env=env, redactor=NOOP_REDACTOR)
    model_var = "PRISM_LIVE_MODEL_" + name.upper().replace("-", "_")
    model = package.model_or_custom(env.get(model_var) or package.default_model)
    try:
        events = await assert_provider_stream_conforms(
            provider,
            {
                "model": model,
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Reply with: OK"}]}
                ],
                "options": {"maxTokens": 256},
            },
        )
    finally:
        await provider.aclose()
    assert any(e["type"] == "content_delta" for e in events)
    assert_no_secret_leak(events, keys)
