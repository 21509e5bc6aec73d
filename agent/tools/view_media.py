"""The `view_media` tool: shows the model an image or PDF of its own chat again, by its id (`m12`).

The lookup is injected (`MediaLookup`), bound by the gateway to one chat, so the tool can never show
another chat's media. The result carries a `media_ref` block, which becomes the real image or
document on the wire like any stored reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from agent.errors import ToolError
from agent.media import MediaClass, media_ref
from agent.tools.registry import Tool, ToolOutcome

_ID = re.compile(r"^\s*m?(\d{1,18})\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class MediaView:
    media_id: int
    kind: MediaClass
    media_type: str
    tokens: int
    name: str | None = None
    width: int | None = None
    height: int | None = None
    pages: int | None = None
    created_at: datetime | None = None


class MediaLookup(Protocol):
    async def find(self, media_id: int) -> MediaView | None: ...


def parse_media_id(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    match = _ID.match(value) if isinstance(value, str) else None
    if match is None:
        raise ToolError("media_id must look like m12 (or 12)")
    return int(match.group(1))


def _describe(view: MediaView) -> str:
    what = "PDF" if view.kind == "document" else "image"
    details = []
    if view.name:
        details.append(view.name)
    if view.width and view.height:
        details.append(f"{view.width}x{view.height} px")
    if view.pages:
        details.append(f"{view.pages} page{'s' if view.pages != 1 else ''}")
    if view.created_at is not None:
        details.append(f"sent {view.created_at.strftime('%Y-%m-%d %H:%M UTC')}")
    suffix = f" ({', '.join(details)})" if details else ""
    return f"Here is {what} m{view.media_id}{suffix}, as it was sent."


def view_media_tool(lookup: MediaLookup) -> Tool:
    """A `view_media` tool over `lookup` (already restricted to one chat by the caller)."""

    async def handler(tool_input: dict[str, Any]) -> ToolOutcome:
        media_id = parse_media_id(tool_input.get("media_id"))
        view = await lookup.find(media_id)
        if view is None:
            return ToolOutcome(f"No image or PDF m{media_id} in this chat (it may have been deleted).")
        block = media_ref(
            media_id=view.media_id,
            kind=view.kind,
            media_type=view.media_type,
            tokens=view.tokens,
            name=view.name,
            width=view.width,
            height=view.height,
            pages=view.pages,
        )
        return ToolOutcome(_describe(view), blocks=(block,))

    return Tool(
        name="view_media",
        description=(
            "Look again at an image or PDF sent earlier in this chat, by the id it is labelled with "
            "(e.g. [photo m12], [PDF m3: contract.pdf, 4 pages]) in the conversation or its summary."
        ),
        input_schema={
            "type": "object",
            "properties": {"media_id": {"type": "string", "description": "the label's id, e.g. m12"}},
            "required": ["media_id"],
            "additionalProperties": False,
        },
        handler=handler,
    )
