"""LLM compaction against a real summary model. Opt-in only: set
PRISM_LIVE_TESTS=1 and a preset's key variable (e.g. OPENAI_API_KEY); the
optional PRISM_LIVE_MODEL_<PRESET> picks the model. Never run in CI."""

from __future__ import annotations

import os

import pytest
from tests.compaction.llm_support import SECRET, Branch

from prism.compaction.llm import create_llm_compaction_strategy
from prism.security import NOOP_REDACTOR, create_redactor

LIVE = os.environ.get("PRISM_LIVE_TESTS") == "1"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not LIVE, reason="live tests are opt-in (PRISM_LIVE_TESTS=1)"),
]


def _presets() -> list[str]:
    if not LIVE:
        return ["none"]
    from prism.providers.packages import PROVIDER_PRESETS

    return sorted(PROVIDER_PRESETS)


@pytest.mark.parametrize("name", _presets())
async def test_a_real_model_writes_the_summary(name: str) -> None:
    from prism.providers.packages import PROVIDER_PRESETS

    package = PROVIDER_PRESETS[name]
    env = dict(os.environ)  # the test is the host: it hands the environment over
    keys = [env[v] for v in package.auth.env_vars if env.get(v)]
    if not keys:
        pytest.skip(f"{name}: set {' or '.join(package.auth.env_vars)} to run")
    model_var = "PRISM_LIVE_MODEL_" + name.upper().replace("-", "_")
    model = package.model_or_custom(env.get(model_var) or package.default_model)
    b = Branch()
    b.user(f"Fix the failing parser test. The deploy token is {SECRET}.")
    b.assistant("", ("c1", "read", {"path": "src/parser.py"}))
    b.tool("c1", "read", "def parse(line):\n    return line.split(',')\n")
    b.assistant("", ("c2", "edit", {"path": "src/parser.py", "old": "','", "new": "', '"}))
    b.tool("c2", "edit", {"ok": True})
    b.assistant("Fixed the separator in src/parser.py.")
    b.user("Now run the tests.")
    b.assistant("All 12 tests pass.")
    provider = package.create(env=env, redactor=NOOP_REDACTOR)
    try:
        strategy = create_llm_compaction_strategy(
            provider=provider, model=model, keep_recent_tokens=10, max_summary_tokens=600
        )
        result = await strategy.compact(b.context(redactor=create_redactor([SECRET])))
    finally:
        await provider.aclose()
    assert result.summary.strip()
    assert SECRET not in result.summary
    assert "src/parser.py" in result.entries[0]["data"]["modifiedFiles"]
