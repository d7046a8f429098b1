"""A tool message's blocks grouped by result, for the request serializers
(docs/providers.md, "Images in tool results")."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prism.providers._http_stream import BodyError
from prism.providers._request_blocks import in_band_tool_result, refuse


@dataclass(slots=True)
class ToolReply:
    """One ``tool_result`` block and the text/image blocks after it."""

    block: Mapping[str, Any]
    extras: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def images(self) -> list[Mapping[str, Any]]:
        return [b for b in self.extras if b.get("type") == "image"]

    @property
    def notes(self) -> list[str]:
        return [str(b.get("text", "")) for b in self.extras if b.get("type") == "text"]


def tool_replies(content: Sequence[Any], index: int) -> list[ToolReply]:
    """A tool message's blocks grouped by result; an image or text block
    belongs to the ``tool_result`` before it."""
    replies: list[ToolReply] = []
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "tool_result":
            replies.append(ToolReply(block))
        elif kind in ("image", "text") and replies:
            replies[-1].extras.append(block)
        else:
            raise refuse(
                block,
                index,
                "tool",
                "tool messages carry tool_result blocks, each followed by the images it returned",
            )
    if not replies:
        raise BodyError(f"messages[{index}] is a tool message with no tool_result")
    return replies


def image_lead(reply: ToolReply) -> str:
    """The text before a tool's images in a following user message (APIs
    whose tool output carries text only)."""
    name = reply.block.get("name") or "tool"
    call_id = reply.block.get("toolCallId")
    count = len(reply.images)
    noun = "image" if count == 1 else f"{count} images"
    return f"The {noun} returned by tool {name!r} (call {call_id}):"


def text_tool_outputs(
    content: Sequence[Any],
    index: int,
    held: list[dict[str, Any]],
    *,
    text_type: str,
    image_part: Callable[[Mapping[str, Any], int], dict[str, Any]],
) -> list[tuple[str, str]]:
    """Each result's call id and output text, for the APIs whose tool output
    carries text only: the text blocks after a result join its text, a
    failure is said in-band, and its images go to ``held`` (after an
    :func:`image_lead` part of type ``text_type``) for a user message that
    follows the run of tool outputs."""
    outputs: list[tuple[str, str]] = []
    for reply in tool_replies(content, index):
        call_id, text = in_band_tool_result(reply.block, index)
        outputs.append((call_id, "\n\n".join([text, *reply.notes])))
        if reply.images:
            held.append({"type": text_type, "text": image_lead(reply)})
            held.extend(image_part(image, index) for image in reply.images)
    return outputs


Rows = list[dict[str, Any]]


def rows_with_tool_images(
    messages: Sequence[Any],
    *,
    tool: Callable[[list[Any], int, Rows], Rows],
    others: Mapping[str, Callable[[list[Any], int], Rows]],
    images_row: Callable[[Rows], dict[str, Any]],
) -> Rows:
    """The wire rows of ``messages`` for the APIs whose tool output carries
    text only: ``tool`` (which puts the images in the list it is given) or
    the writer of the message's role gives its rows, and the images of a run
    of tool messages follow the whole run as one ``images_row``, since a
    user message between two tool messages would break the API's call and
    answer pairing."""
    rows: Rows = []
    held: Rows = []
    for index, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content")
        if not isinstance(content, list):
            raise BodyError(f"messages[{index}].content must be a list of blocks")
        if held and role != "tool":
            rows.append(images_row(held))
            held = []
        if role == "tool":
            rows.extend(tool(content, index, held))
        elif isinstance(role, str) and role in others:
            rows.extend(others[role](content, index))
        else:
            raise BodyError(f"messages[{index}] has unknown role {role!r}")
    if held:
        rows.append(images_row(held))
    return rows
