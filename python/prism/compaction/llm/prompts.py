"""The prompts the LLM strategy sends. Public so a host can read them, log
them, or pass its own through ``create_llm_compaction_strategy(prompts=...)``.

The conversation is sent as one user message of plain text (inside
``<conversation>`` tags), never as chat turns: a model handed real turns
tends to continue the conversation instead of describing it.
"""

from __future__ import annotations

from dataclasses import dataclass

from prism.errors import ConfigError

SUMMARY_SYSTEM_PROMPT = """\
You write context checkpoints. You are given a transcript of a working session \
between a user and an AI assistant that uses tools. Describe it so that another \
model can pick the work up without the transcript.

Never answer questions from the transcript, never carry on the conversation, \
never call tools. Reply with the checkpoint only, in the format you are asked for."""

SUMMARY_PROMPT = """\
Write a checkpoint of the conversation above, in this markdown layout:

## Goal
What the user wants done (several items if the session moved between tasks).

## Constraints and preferences
- Requirements, conventions and preferences the user stated, or "(none)".

## Progress
### Done
- [x] Finished work.
### In progress
- [ ] Work that was under way.
### Blocked
- What stands in the way, if anything.

## Decisions
- **Decision**: the reason for it.

## Next steps
1. What should happen next, in order.

## Key context
- Facts, values, commands and references needed to continue, or "(none)".

Be brief. Keep file paths, identifiers, commands and error messages exactly as written."""

UPDATE_SUMMARY_PROMPT = """\
The conversation above is NEW history that follows the checkpoint in \
<previous-summary>. Produce one updated checkpoint that covers both:

- keep everything from the previous checkpoint that still matters;
- add the new progress, decisions and context;
- move finished items from "In progress" to "Done" and rewrite "Next steps";
- drop only what the new history made obsolete.

Use the same markdown layout as the previous checkpoint (Goal; Constraints and \
preferences; Progress with Done / In progress / Blocked; Decisions; Next steps; \
Key context). Be brief. Keep file paths, identifiers, commands and error \
messages exactly as written."""

SPLIT_TURN_PROMPT = """\
The conversation above is the BEGINNING of one long turn; its end is kept \
verbatim and follows this summary. Summarize the beginning so the kept end \
makes sense:

## Request
What the user asked for in this turn.

## Work so far
- What was done and decided before the kept part.

## Needed for the rest
- Whatever the kept part relies on (names, values, partial results).

Be brief."""

SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Earlier in the current turn:**\n\n"
"""Joins the history summary and the split-turn prefix summary."""

NO_HISTORY_SUMMARY = "No earlier history."
"""Stands in for the history summary when only a split turn's prefix was summarized."""


@dataclass(frozen=True, slots=True)
class CompactionPrompts:
    """The four prompts; replace any of them with ``dataclasses.replace``."""

    system: str = SUMMARY_SYSTEM_PROMPT
    summary: str = SUMMARY_PROMPT
    update: str = UPDATE_SUMMARY_PROMPT
    split_turn: str = SPLIT_TURN_PROMPT

    def __post_init__(self) -> None:
        for name in ("system", "summary", "update", "split_turn"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"llm compaction prompt {name!r} must be a non-empty string")


DEFAULT_PROMPTS = CompactionPrompts()
