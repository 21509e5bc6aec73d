"""Media in a session, as the agent sees it (pure): the stored reference block and what media costs.

A message that carries an image or a PDF stores a `media_ref` block instead of the bytes; the window
turns it into a real `image`/`document` block at request time. The reference carries the numbers the
context engine needs (token cost, size, pages), so counting a message never looks at base64.

Token cost. Images are counted as width x height / 750 (rounded up), the formula Anthropic gives for
the models this gateway targets. The newer ceil(w/28) x ceil(h/28) rule comes within ~5% of it for the
images we send (at most 1568 px on the long edge) and is the lower of the two for them; a high estimate
costs at most an early compaction while a low one can overflow the window, so the 750-pixel rule is used
everywhere (the gateway, hygiene, the compressor and the test fakes). A PDF
page is billed as its extracted text plus an image of the page, rendered at the model's native size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from agent.types import Block, Message

MEDIA_REF: Final = "media_ref"
"""Block type of a stored reference; never sent to the API as is."""

MediaClass = Literal["image", "document"]

PIXELS_PER_TOKEN: Final = 750
NATIVE_LONG_EDGE: Final = 1568
"""Images with a longer edge are downscaled by the API (and by us, before storing)."""
PDF_POINTS_LONG_EDGE_DEFAULT: Final = 792
"""US Letter / A4 are about 792-842 points high; used when a page's size is unknown."""


def image_tokens(width: int, height: int) -> int:
    """Tokens the API bills for an image of this size (after its own downscale to the native size)."""
    if width <= 0 or height <= 0:
        return 0
    w, h = fit_within(width, height, NATIVE_LONG_EDGE)
    return math.ceil(w * h / PIXELS_PER_TOKEN)


def fit_within(width: int, height: int, long_edge: int) -> tuple[int, int]:
    """(width, height) scaled down, aspect kept, so the longer edge is at most `long_edge`."""
    longest = max(width, height)
    if longest <= long_edge:
        return width, height
    scale = long_edge / longest
    return max(1, round(width * scale)), max(1, round(height * scale))


def page_image_tokens(width_pt: float, height_pt: float) -> int:
    """The image part of one PDF page: the page rendered with its long edge at the native size."""
    if width_pt <= 0 or height_pt <= 0:
        width_pt, height_pt = PDF_POINTS_LONG_EDGE_DEFAULT * 0.77, PDF_POINTS_LONG_EDGE_DEFAULT
    scale = NATIVE_LONG_EDGE / max(width_pt, height_pt)
    return math.ceil(round(width_pt * scale) * round(height_pt * scale) / PIXELS_PER_TOKEN)


def media_ref(
    *,
    media_id: int,
    kind: MediaClass,
    media_type: str,
    tokens: int,
    name: str | None = None,
    width: int | None = None,
    height: int | None = None,
    pages: int | None = None,
) -> Block:
    """The stored block for one media item (keys sorted so the stored JSON is stable)."""
    block: Block = {"type": MEDIA_REF, "media_id": media_id, "kind": kind, "media_type": media_type}
    block["tokens"] = tokens
    if name:
        block["name"] = name
    if width is not None and height is not None:
        block["width"], block["height"] = width, height
    if pages is not None:
        block["pages"] = pages
    return block


def is_media_ref(block: Mapping[str, Any]) -> bool:
    return block.get("type") == MEDIA_REF


def media_ref_tokens(block: Mapping[str, Any]) -> int:
    """The token cost a reference carries (0 when it is damaged: it renders as a short note then)."""
    tokens = block.get("tokens")
    return tokens if isinstance(tokens, int) and tokens > 0 else 0


def short_label(block: Mapping[str, Any]) -> str:
    """A short textual stand-in for a reference, e.g. `[image m12: screenshot.png]`."""
    kind = "PDF" if block.get("kind") == "document" else "image"
    name = block.get("name")
    suffix = f": {name}" if isinstance(name, str) and name else ""
    return f"[{kind} m{block.get('media_id')}{suffix}]"


def demoted_note(block: Mapping[str, Any]) -> str:
    """What stands for an item that no longer travels with every request (see `agent.media_aging`)."""
    return f"(m{block.get('media_id')} is no longer attached; view_media shows it again)"


# -- rendering references into API blocks --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MediaBytes:
    """What rendering needs of a stored item: its type and its base64 text (encoded once, reused)."""

    media_type: str
    base64_data: str


def referenced_media(messages: Sequence[Message]) -> list[int]:
    """Ids of every media item the messages refer to, first occurrence order."""
    seen: dict[int, None] = {}
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            continue
        for block in content:
            nested = block.get("content") if block.get("type") == "tool_result" else None
            for candidate in [block, *(nested if isinstance(nested, list) else [])]:
                if is_media_ref(candidate) and isinstance(candidate.get("media_id"), int):
                    seen.setdefault(candidate["media_id"], None)
    return list(seen)


def refs_in(messages: Sequence[Message], *, limit: int) -> list[Block]:
    """The newest `limit` distinct references in the messages (oldest first), for a summary call to
    look at what it is summarizing."""
    found: dict[int, Block] = {}
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            continue
        for block in content:
            nested = block.get("content") if block.get("type") == "tool_result" else None
            for candidate in [block, *(nested if isinstance(nested, list) else [])]:
                media_id = candidate.get("media_id")
                if is_media_ref(candidate) and isinstance(media_id, int) and media_id not in found:
                    found[media_id] = {k: v for k, v in candidate.items() if k != "cache_control"}
    return list(found.values())[-limit:] if limit > 0 else []


REQUEST_MAX_ITEMS: Final = 100
"""The API takes at most 100 images per request."""
REQUEST_MAX_BASE64: Final = 24 * 1024 * 1024
"""Base64 media per request, leaving room for the rest of a 32 MB request."""


def render_media(
    messages: Sequence[Message],
    items: Mapping[int, MediaBytes],
    *,
    max_items: int = REQUEST_MAX_ITEMS,
    max_base64: int = REQUEST_MAX_BASE64,
) -> list[Message]:
    """The messages with every `media_ref` turned into an `image`/`document` block (pure, deterministic).

    Each item appears once per request, where it was first sent; a later reference to it becomes a
    short note. When the request cannot carry every item (count or size), the newest are shown and the
    oldest become notes. An item no longer stored becomes a note saying so. References inside a
    tool_result are rendered the same way. Messages without references are returned as they are.
    """
    shown_ids = _within_budget(referenced_media(messages), items, max_items, max_base64)
    shown: set[int] = set()

    def render(block: Block) -> Block:
        media_id = block.get("media_id")
        item = items.get(media_id) if isinstance(media_id, int) else None
        if item is None:
            return {"type": "text", "text": f"{short_label(block)} (no longer stored)"}
        if media_id in shown:
            return {"type": "text", "text": f"{short_label(block)} (shown above)"}
        if media_id not in shown_ids:
            return {
                "type": "text",
                "text": f"{short_label(block)} (left out of this request: too many files)",
            }
        shown.add(media_id)
        return api_block(block, item)

    out: list[Message] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str) or not any(_has_ref(b) for b in content):
            out.append(message)
            continue
        blocks: list[Block] = []
        for block in content:
            if is_media_ref(block):
                blocks.append(render(block))
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                inner = [render(b) if is_media_ref(b) else b for b in block["content"]]
                blocks.append({**block, "content": inner})
            else:
                blocks.append(block)
        out.append({"role": message["role"], "content": blocks})
    return out


def _has_ref(block: Mapping[str, Any]) -> bool:
    if is_media_ref(block):
        return True
    inner = block.get("content")
    return block.get("type") == "tool_result" and isinstance(inner, list) and any(map(is_media_ref, inner))


def _within_budget(
    ids: Sequence[int], items: Mapping[int, MediaBytes], max_items: int, max_base64: int
) -> set[int]:
    """The newest items that fit the request's count and size limits."""
    chosen: set[int] = set()
    used = 0
    for media_id in reversed(ids):
        item = items.get(media_id)
        if item is None:
            continue
        size = len(item.base64_data)
        if len(chosen) >= max_items or used + size > max_base64:
            continue
        chosen.add(media_id)
        used += size
    return chosen


def api_block(ref: Mapping[str, Any], item: MediaBytes) -> Block:
    """The API block for one stored item (a cache marker placed on the reference moves to it)."""
    source = {"type": "base64", "media_type": item.media_type, "data": item.base64_data}
    block: Block
    if ref.get("kind") == "document":
        block = {"type": "document", "source": source}
        name = ref.get("name")
        if isinstance(name, str) and name:
            block["title"] = name[:200]
    else:
        block = {"type": "image", "source": source}
    if "cache_control" in ref:
        block["cache_control"] = ref["cache_control"]
    return block
