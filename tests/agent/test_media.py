"""Stored media references: their cost, their labels, and how a request renders them (pure)."""

from __future__ import annotations

import copy

from agent.media import MediaBytes, media_ref, referenced_media, render_media, short_label
from agent.types import Message

PNG = MediaBytes("image/png", "iVBORw0KGgo=")
PDF = MediaBytes("application/pdf", "JVBERi0xLjQ=")


def ref(media_id: int, kind: str = "image", **kw: object) -> dict[str, object]:
    media_type = "application/pdf" if kind == "document" else "image/png"
    return media_ref(media_id=media_id, kind=kind, media_type=media_type, tokens=100, **kw)  # type: ignore[arg-type]


def user(*blocks: dict[str, object]) -> Message:
    return {"role": "user", "content": [*blocks, {"type": "text", "text": "look"}]}  # type: ignore[list-item]


def test_references_become_image_and_document_blocks() -> None:
    messages = [user(ref(1), ref(2, "document", name="contract.pdf", pages=3))]
    rendered = render_media(messages, {1: PNG, 2: PDF})
    image, document, text = rendered[0]["content"]  # type: ignore[misc]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG.base64_data},
    }
    assert document == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF.base64_data},
        "title": "contract.pdf",
    }
    assert text == {"type": "text", "text": "look"}


def test_a_request_never_carries_the_same_item_twice() -> None:
    messages = [user(ref(1)), {"role": "assistant", "content": "nice"}, user(ref(1))]
    rendered = render_media(messages, {1: PNG})
    assert rendered[0]["content"][0]["type"] == "image"  # type: ignore[index]
    assert rendered[2]["content"][0] == {"type": "text", "text": "[image m1] (shown above)"}  # type: ignore[index]


def test_rendering_is_deterministic_and_leaves_its_input_alone() -> None:
    messages = [user(ref(1)), {"role": "assistant", "content": "ok"}, {"role": "user", "content": "plain"}]
    before = copy.deepcopy(messages)
    first, second = render_media(messages, {1: PNG}), render_media(messages, {1: PNG})
    assert first == second
    assert messages == before
    assert first[2] is messages[2]  # text-only messages pass through untouched


def test_items_no_longer_stored_are_named_not_dropped() -> None:
    rendered = render_media([user(ref(9, name="a.png"))], {})
    assert rendered[0]["content"][0] == {"type": "text", "text": "[image m9: a.png] (no longer stored)"}  # type: ignore[index]


def test_referenced_media_lists_ids_once_in_order() -> None:
    assert referenced_media([user(ref(3), ref(1)), user(ref(3))]) == [3, 1]
    assert short_label(ref(2, "document", name="x.pdf")) == "[PDF m2: x.pdf]"


def test_a_cache_marker_on_a_reference_stays_on_its_block() -> None:
    marked = {**ref(1), "cache_control": {"type": "ephemeral"}}
    rendered = render_media([{"role": "user", "content": [marked]}], {1: PNG})  # type: ignore[list-item]
    assert rendered[0]["content"][0]["cache_control"] == {"type": "ephemeral"}  # type: ignore[index]


def test_the_newest_items_are_kept_when_a_request_cannot_carry_all() -> None:
    messages = [user(ref(i)) for i in range(1, 5)]
    rendered = render_media(messages, dict.fromkeys(range(1, 5), PNG), max_items=2)
    kinds = [m["content"][0]["type"] for m in rendered]  # type: ignore[index]
    assert kinds == ["text", "text", "image", "image"]
    assert "left out of this request" in rendered[0]["content"][0]["text"]  # type: ignore[index]
