"""The summary request and the provider call behind it.

``build_summary_request`` is pure (the golden test pins its output);
``request_summary`` sends it, retrying under the session's retry policy, and
returns the collected text or raises. Nothing here touches a session.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from typing import Any

from prism import _native
from prism.compaction.llm.options import LlmCompactionOptions
from prism.compaction.llm.serialize import PART_SEPARATOR
from prism.contracts import ErrorInfo, Message, ProviderRequest
from prism.errors import ConfigError, PrismError, ProviderError
from prism.providers.base import error_info_from_exception
from prism.retry import RetryContext, RetryOptions, decide_retry, wait_for_retry
from prism.security.redaction import SecretRedactor, redact_error_info

OMITTED_MARKER = "[... {count} earlier part(s) omitted to fit the summary model's window]"


class LlmCompactionError(PrismError):
    """An LLM compaction could not produce a summary; nothing was appended."""

    code = "llm_compaction_failed"


def _text_message(role: str, text: str) -> Message:
    return {"role": role, "content": [{"type": "text", "text": text}]}  # type: ignore[typeddict-item]


def compose_prompt(
    conversation: str, instructions: str, *, previous_summary: str | None = None
) -> str:
    """The user message: the transcript in ``<conversation>`` tags, the
    previous summary (update mode) in ``<previous-summary>`` tags, then the
    instructions."""
    text = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous_summary is not None:
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    return text + instructions


def instructions_for(
    options: LlmCompactionOptions, *, update: bool, split_turn: bool = False
) -> str:
    prompts = options.prompts
    if split_turn:
        return prompts.split_turn
    base = prompts.update if update else prompts.summary
    if options.custom_instructions:
        base = f"{base}\n\nAlso focus on: {options.custom_instructions}"
    return base


def build_summary_request(
    options: LlmCompactionOptions,
    parts: Sequence[str],
    *,
    instructions: str,
    max_tokens: int,
    redactor: SecretRedactor,
    previous_summary: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> ProviderRequest:
    """The provider request for one summary. ``parts`` are the serialized
    transcript's parts, oldest first. When the summary model declares
    ``limits.contextWindow``, the oldest parts are dropped (with a marker)
    until the estimated request plus ``max_tokens`` fits; a request that
    cannot fit even without history raises ``LlmCompactionError``."""
    model = dict(options.model or {})
    system = _text_message("system", options.prompts.system)
    window = _window(model)
    kept = list(parts)
    omitted = 0
    while True:
        conversation = PART_SEPARATOR.join(kept)
        if omitted:
            conversation = OMITTED_MARKER.format(count=omitted) + PART_SEPARATOR + conversation
        text = redactor.redact_text(
            compose_prompt(conversation, instructions, previous_summary=previous_summary)
        )
        messages = [system, _text_message("user", text)]
        if window is None:
            break
        used = sum(map(_native.estimate_message_tokens, messages)) + max_tokens
        if used <= window:
            break
        if not kept:
            raise LlmCompactionError(
                f"the summary request cannot fit the summary model's window ({used} estimated "
                f"tokens > contextWindow {window}); lower max_summary_tokens or use a model "
                "with a larger window",
                code="summary_request_too_large",
            )
        # Drop about as many parts as the overflow needs, at least one.
        excess = used - window
        drop = 1
        freed = _native.estimate_text_tokens(kept[0])
        while freed < excess and drop < len(kept):
            freed += _native.estimate_text_tokens(kept[drop])
            drop += 1
        del kept[:drop]
        omitted += drop
    request_options: dict[str, Any] = dict(options.provider_options)
    request_options["maxTokens"] = max_tokens
    if options.thinking_level is not None:
        extra = dict(request_options.get("extra") or {})
        extra["thinkingLevel"] = options.thinking_level
        request_options["extra"] = extra
    request: ProviderRequest = {"model": model, "messages": messages, "options": request_options}  # type: ignore[typeddict-item]
    if metadata:
        request["metadata"] = dict(metadata)
    return request


def _window(model: Mapping[str, Any]) -> int | None:
    limits = model.get("limits")
    window = limits.get("contextWindow") if isinstance(limits, Mapping) else None
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        return window
    return None


async def apply_request_policies(
    options: LlmCompactionOptions, request: ProviderRequest
) -> ProviderRequest:
    for index, policy in enumerate(options.provider_request_policies):
        apply = getattr(policy, "apply", None)
        result: Any = apply(request) if callable(apply) else policy(request)
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            continue  # a policy that edits in place
        if not isinstance(result, Mapping) or not isinstance(result.get("messages"), list):
            raise ConfigError(
                f"llm compaction provider_request_policies[{index}] returned "
                f"{type(result).__name__}, expected a provider request"
            )
        request = result  # type: ignore[assignment]
    return request


async def _stream_once(
    provider: Any, request: ProviderRequest, redactor: SecretRedactor
) -> tuple[str, ErrorInfo | None]:
    texts: list[str] = []
    try:
        stream = provider.generate(request)
        closer = aclosing(stream) if hasattr(stream, "aclose") else None
        if closer is not None:
            async with closer:
                error = await _consume(stream, texts)
        else:
            error = await _consume(stream, texts)
    except Exception as exc:  # a provider that raises instead of yielding error
        error = error_info_from_exception(exc, redactor)
    return "".join(texts), error


async def _consume(stream: Any, texts: list[str]) -> ErrorInfo | None:
    async for event in stream:
        kind = event.get("type") if isinstance(event, Mapping) else None
        if kind == "content_delta" and isinstance(event.get("text"), str):
            texts.append(event["text"])
        elif kind == "error":
            info = event.get("error")
            return dict(info) if isinstance(info, Mapping) else {"message": "provider error"}  # type: ignore[return-value]
        elif kind == "done":
            return None
    return None


async def request_summary(
    provider: Any,
    request: ProviderRequest,
    *,
    retry: RetryOptions | None,
    redactor: SecretRedactor,
    session_id: str,
    sleep: Any = None,
) -> str:
    """Send ``request`` and return the summary text (stripped).

    A provider ``error`` (or a raise) is retried when ``retry`` allows it,
    then raised as ``ProviderError`` with the message redacted. Partial text
    from a failed attempt is dropped, and that is why a retry is allowed even
    after text arrived: none of it reached a listener. An empty summary raises
    ``LlmCompactionError``. Cancellation propagates untouched.
    """
    policy = retry.resolve_policy() if retry is not None else None
    attempt = 1
    while True:
        text, error = await _stream_once(provider, request, redactor)
        if error is None:
            summary = text.strip()
            if not summary:
                raise LlmCompactionError(
                    "the summary model returned an empty summary", code="empty_summary"
                )
            return summary
        info = redact_error_info(error, redactor)
        if policy is None or retry is None:
            raise ProviderError(info)
        context = RetryContext(
            attempt=attempt, error=info, session_id=session_id, metadata=retry.metadata
        )
        decision = await decide_retry(policy, context)
        if not decision.retry:
            raise ProviderError(info)
        if sleep is not None:
            await wait_for_retry(decision, sleep)
        else:
            await wait_for_retry(decision)
        attempt += 1
