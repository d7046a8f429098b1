"""The LLM compaction strategy: a model writes the summary.

``compact(context)`` prepares the branch (prepare.py), serializes and redacts
the part to summarize, sends one summary request (plus one for the prefix of
a split turn), redacts and caps the answer, and returns one ``compaction``
entry. Any failure raises before a result exists, so the runtime appends
nothing and the session stays usable.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from prism import _native
from prism.compaction.llm.files import format_file_operations
from prism.compaction.llm.options import (
    DEFAULT_RESERVE_TOKENS,
    LLM_COMPACTION_STRATEGY_NAME,
    LlmCompactionOptions,
)
from prism.compaction.llm.prepare import (
    DEFAULT_KEEP_RECENT_TOKENS,
    LlmCompactionPreparation,
    prepare_llm_compaction,
)
from prism.compaction.llm.prompts import NO_HISTORY_SUMMARY, SPLIT_TURN_SEPARATOR
from prism.compaction.llm.request import (
    LlmCompactionError,
    apply_request_policies,
    build_summary_request,
    instructions_for,
    request_summary,
)
from prism.compaction.llm.serialize import (
    DEFAULT_MAX_TOOL_RESULT_CHARS,
    serialize_compaction_parts,
)
from prism.compaction.options import CompactionContext, CompactionResult
from prism.contracts import CompactionEntry, ProviderRequest
from prism.errors import CredentialError
from prism.security.redaction import SecretRedactor, redactable_credentials, with_secrets

SUMMARY_TRUNCATED_MARKER = "\n[summary truncated]"


class LlmCompactionStrategy:
    """Built by :func:`create_llm_compaction_strategy`; ``options`` is frozen."""

    __slots__ = ("name", "options")

    def __init__(self, options: LlmCompactionOptions) -> None:
        self.options = options
        self.name = options.name

    def __repr__(self) -> str:  # never shows secrets or credentials
        model: dict[str, Any] = dict(self.options.model or {})
        return (
            f"LlmCompactionStrategy(name={self.name!r}, model="
            f"{model.get('provider')}/{model.get('model')}, keep_recent_tokens="
            f"{self.options.keep_recent_tokens})"
        )

    def prepare(self, context: CompactionContext) -> LlmCompactionPreparation:
        return prepare_llm_compaction(
            context,
            keep_recent_tokens=self.options.keep_recent_tokens,
            track_file_operations=self.options.track_file_operations,
        )

    async def compact(self, context: CompactionContext) -> CompactionResult:
        options = self.options
        prep = self.prepare(context)
        if not prep.has_work:
            raise LlmCompactionError(
                "nothing to compact: the live branch is a single turn "
                f"({prep.kept_tokens} estimated tokens)",
                code="nothing_to_compact",
            )
        provider, credential_secrets = await self._provider()
        # The agent's redactor, plus the summary model's own key when one resolved.
        redactor = with_secrets(context.redactor, credential_secrets)
        retry = _retry_options(options.retry, getattr(context, "retry", None))
        sleep = getattr(context, "sleep", None)
        budget = options.summary_token_budget
        prefix_budget = max(1, budget // 3) if prep.turn_prefix_entries else 0
        history_budget = max(1, budget - prefix_budget)

        async def ask(request: ProviderRequest) -> str:
            request = await apply_request_policies(options, request)
            return await request_summary(
                provider,
                request,
                retry=retry,
                redactor=redactor,
                session_id=prep.session_id,
                sleep=sleep,
            )

        metadata = {"sessionId": prep.session_id, "compaction": options.name}
        if prep.history_entries:
            history = await ask(
                self.summary_request(prep, redactor, max_tokens=history_budget, metadata=metadata)
            )
        else:
            # Only a split turn's prefix is new: the previous summary carries over as is.
            history = prep.previous_summary or NO_HISTORY_SUMMARY
        summary = history
        if prep.turn_prefix_entries:
            prefix = await ask(
                self.summary_request(
                    prep, redactor, split_turn=True, max_tokens=prefix_budget, metadata=metadata
                )
            )
            summary = f"{history}{SPLIT_TURN_SEPARATOR}{prefix}"
        summary = self._finish(summary, prep, redactor)
        return CompactionResult(
            summary=summary, entries=[self._entry(context, prep, summary, redactor)]
        )

    # --- requests ------------------------------------------------------------------

    def summary_request(
        self,
        prep: LlmCompactionPreparation,
        redactor: SecretRedactor,
        *,
        split_turn: bool = False,
        max_tokens: int,
        metadata: dict[str, Any] | None = None,
    ) -> ProviderRequest:
        """The main summary request (the history, in update mode when a
        previous summary exists: it is updated, never re-summarized from its
        own text), or with ``split_turn`` the one that summarizes the prefix
        of a turn cut in two."""
        options = self.options
        previous = None if split_turn else prep.previous_summary
        entries = prep.turn_prefix_entries if split_turn else prep.history_entries
        parts = serialize_compaction_parts(
            entries, max_tool_result_chars=options.max_tool_result_chars, redactor=redactor
        )
        return build_summary_request(
            options,
            parts,
            instructions=instructions_for(
                options, update=previous is not None, split_turn=split_turn
            ),
            max_tokens=max_tokens,
            redactor=redactor,
            previous_summary=previous,
            metadata=metadata,
        )

    # --- provider and result --------------------------------------------------------

    async def _provider(self) -> tuple[Any, frozenset[str]]:
        """The provider for this call. A factory gets a freshly resolved
        credential; the credential's secrets join the redactor."""
        options = self.options
        if not options.is_provider_factory:
            return options.provider, frozenset()
        from prism.security.credentials import resolve_credential

        request = options.credential_request or {}
        label = "/".join(str(request[k]) for k in ("provider", "name") if request.get(k))
        resolved = await resolve_credential(options.credential, name=label or "summary provider")
        failure: str | None = None
        provider: Any = None
        try:
            provider = options.provider(resolved.value)
            if inspect.isawaitable(provider):
                provider = await provider
        except CredentialError:
            raise
        except Exception as exc:
            # Only the type: the factory's message may quote the credential.
            failure = f"the summary provider factory failed with {type(exc).__name__}"
        if failure is not None:
            raise LlmCompactionError(failure, code="provider_factory_failed")
        if not callable(getattr(provider, "generate", None)):
            raise LlmCompactionError(
                f"the summary provider factory returned {type(provider).__name__}, "
                "not an AIProvider",
                code="provider_factory_failed",
            )
        # A placeholder key too short to redact is used, not redacted (as the providers do).
        return provider, frozenset(
            redactable_credentials(sorted(resolved.secrets), origin="llm compaction credential")
        )

    def _finish(
        self, summary: str, prep: LlmCompactionPreparation, redactor: SecretRedactor
    ) -> str:
        """Redact the model's text again (it may echo a secret), add the file
        lists, and cap the whole at the summary budget (in estimated tokens)."""
        options = self.options
        text = redactor.redact_text(summary)
        files = ""
        if options.include_file_operations and prep.file_operations is not None:
            files = redactor.redact_text(format_file_operations(prep.file_operations))
        max_chars = options.summary_token_budget * 4  # estimate_text_tokens is ceil(chars / 4)
        room = max_chars - (len(files) + 2 if files else 0)
        if files and room < max_chars // 2:
            files, room = "", max_chars  # the lists stay in the entry's data
        text = _cap(text, room)
        return f"{text}\n\n{files}" if files else text

    def _entry(
        self,
        context: CompactionContext,
        prep: LlmCompactionPreparation,
        summary: str,
        redactor: SecretRedactor,
    ) -> CompactionEntry:
        after = _native.estimate_text_tokens(summary) + _native.MESSAGE_OVERHEAD_TOKENS
        data = prep.entry_data(strategy=self.name, estimated_tokens_after=after + prep.kept_tokens)
        # Paths in the data are host data too: redacted like the summary.
        return context.compaction_entry(summary, redactor.redact_value(data))


def _cap(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    keep = max(0, max_chars - len(SUMMARY_TRUNCATED_MARKER))
    return text[:keep] + SUMMARY_TRUNCATED_MARKER[: max_chars - keep]


def _retry_options(own: Any, session: Any) -> Any:
    """The strategy's ``retry`` option wins; ``None`` follows the session's."""
    if own is False:
        return None
    if own is not None:
        return own
    return session


def create_llm_compaction_strategy(
    *,
    provider: Any = None,
    model: Any = None,
    summary_provider: Any = None,
    summary_model: Any = None,
    credential: Any = None,
    credential_request: Any = None,
    provider_options: Any = None,
    provider_request_policies: Sequence[Any] = (),
    custom_instructions: str | None = None,
    thinking_level: str | None = None,
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    max_summary_tokens: int | None = None,
    max_output_tokens: int | None = None,
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS,
    track_file_operations: bool = True,
    include_file_operations: bool = True,
    prompts: Any = None,
    retry: Any = None,
    name: str = LLM_COMPACTION_STRATEGY_NAME,
) -> LlmCompactionStrategy:
    """A provider-backed compaction strategy (docs/compaction.md, "LLM
    compaction"). Invalid options raise ``ConfigError`` here, never mid-run."""
    extra: dict[str, Any] = {}
    if prompts is not None:
        extra["prompts"] = prompts
    return LlmCompactionStrategy(
        LlmCompactionOptions(
            provider=provider,
            model=model,
            summary_provider=summary_provider,
            summary_model=summary_model,
            credential=credential,
            credential_request=credential_request,
            provider_options=provider_options if provider_options is not None else {},
            provider_request_policies=provider_request_policies,
            custom_instructions=custom_instructions,
            thinking_level=thinking_level,
            reserve_tokens=reserve_tokens,
            keep_recent_tokens=keep_recent_tokens,
            max_summary_tokens=max_summary_tokens,
            max_output_tokens=max_output_tokens,
            max_tool_result_chars=max_tool_result_chars,
            track_file_operations=track_file_operations,
            include_file_operations=include_file_operations,
            retry=retry,
            name=name,
            **extra,
        )
    )
