"""Registering the LLM strategy with an extension kernel.

Loading the extension only registers an inert strategy under
``llm-compaction`` in ``kernel.registries.compaction_strategies``: nothing
calls a provider or resolves a credential until a host resolves the strategy
and hands it to ``create_agent(compaction=...)`` or ``session.compact``.
"""

from __future__ import annotations

from typing import Any

from prism.compaction.llm.options import LLM_COMPACTION_STRATEGY_NAME
from prism.compaction.llm.strategy import LlmCompactionStrategy, create_llm_compaction_strategy

LLM_COMPACTION_EXTENSION_NAME = "prism-compaction-llm"


def create_llm_compaction_extension(
    strategy: LlmCompactionStrategy | None = None, **options: Any
) -> Any:
    """An extension whose setup registers the strategy as ``llm-compaction``
    (or ``options["name"]``). Pass a built ``strategy`` or the keyword options
    of :func:`create_llm_compaction_strategy`; the options are validated now,
    so a bad option fails before the kernel loads anything."""
    from prism.extensions import ExtensionAPI, define_extension

    if strategy is None:
        strategy = create_llm_compaction_strategy(**options)
    elif options:
        raise TypeError("pass either a strategy or strategy options, not both")
    elif not isinstance(strategy, LlmCompactionStrategy):
        raise TypeError(f"strategy must be an LlmCompactionStrategy, got {type(strategy).__name__}")
    built = strategy

    def setup(api: ExtensionAPI) -> None:
        api.register_compaction_strategy(built, name=built.name)

    return define_extension(
        LLM_COMPACTION_EXTENSION_NAME,
        setup,
        description=f"registers the {LLM_COMPACTION_STRATEGY_NAME!r} compaction strategy",
    )
