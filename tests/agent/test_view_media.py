"""The view_media tool: ids like m12, a reference block in its result, a clear answer for unknown ids."""

from __future__ import annotations

import pytest

from agent.errors import ToolError
from agent.tools.registry import ToolRegistry
from agent.tools.view_media import MediaView, parse_media_id, view_media_tool


class Lookup:
    def __init__(self, *views: MediaView) -> None:
        self.views = {v.media_id: v for v in views}
        self.asked: list[int] = []

    async def find(self, media_id: int) -> MediaView | None:
        self.asked.append(media_id)
        return self.views.get(media_id)


def test_ids_are_read_with_or_without_their_m() -> None:
    assert parse_media_id("m12") == 12
    assert parse_media_id(" M7 ") == 7
    assert parse_media_id(3) == 3
    for bad in ("image 3", "", None, True, -1, "m"):
        with pytest.raises(ToolError):
            parse_media_id(bad)


async def test_result_carries_a_reference_before_its_text() -> None:
    pdf = MediaView(5, "document", "application/pdf", 5000, name="lease.pdf", pages=2)
    registry = ToolRegistry([view_media_tool(Lookup(pdf))])
    outcome = await registry.run("view_media", {"media_id": "m5"})
    assert not outcome.is_error
    ref, text = outcome.content  # type: ignore[misc]
    assert ref == {
        "type": "media_ref",
        "media_id": 5,
        "kind": "document",
        "media_type": "application/pdf",
        "tokens": 5000,
        "name": "lease.pdf",
        "pages": 2,
    }
    assert text == {"type": "text", "text": "Here is PDF m5 (lease.pdf, 2 pages), as it was sent."}


async def test_unknown_ids_and_bad_input() -> None:
    registry = ToolRegistry([view_media_tool(Lookup())])
    missing = await registry.run("view_media", {"media_id": "m9"})
    assert missing.content == "No image or PDF m9 in this chat (it may have been deleted)."
    bad = await registry.run("view_media", {"media_id": "the cat"})
    assert bad.is_error
    assert "media_id must look like m12" in bad.text
