"""Stored rows become an API-valid window: merged turns, repaired tool pairs, pruned output hidden."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.compaction.request_window import (
    CONVERSATION_START,
    INTERRUPTED_RESULT,
    PRUNED_MARKER,
    build_window,
)


@dataclass(frozen=True)
class Row:
    id: int
    role: str
    content: Any
    pruned: bool = False


def text(t: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": t}]


def test_group_chatter_between_replies_becomes_one_user_turn_with_all_ids() -> None:
    rows = [
        Row(1, "user", text("[Ann] hi")),
        Row(2, "user", text("[Bo] hello")),
        Row(3, "assistant", text("hey")),
    ]
    items = build_window(rows)
    assert [i.message["role"] for i in items] == ["user", "assistant"]
    assert items[0].ids == (1, 2)
    assert [b["text"] for b in items[0].message["content"]] == ["[Ann] hi", "[Bo] hello"]


def test_unmerged_window_keeps_one_message_per_row_for_the_compressor() -> None:
    rows = [Row(1, "user", text("a")), Row(2, "user", text("b")), Row(3, "assistant", text("c"))]
    assert [i.ids for i in build_window(rows, merge=False)] == [(1,), (2,), (3,)]


def test_tool_results_lead_a_merged_user_turn() -> None:
    rows = [
        Row(1, "user", text("time?")),
        Row(2, "assistant", [{"type": "tool_use", "id": "t1", "name": "current_time", "input": {}}]),
        Row(3, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "12:00"}]),
        Row(4, "user", text("[Bo] also me")),
    ]
    items = build_window(rows)
    last = items[-1].message["content"]
    assert isinstance(last, list)
    assert last[0]["type"] == "tool_result"
    assert last[1]["text"] == "[Bo] also me"


def test_a_tool_call_interrupted_by_a_crash_gets_a_stub_result() -> None:
    rows = [
        Row(1, "user", text("time?")),
        Row(2, "assistant", [{"type": "tool_use", "id": "t1", "name": "current_time", "input": {}}]),
        Row(3, "user", text("hello again")),
    ]
    items = build_window(rows)
    content = items[-1].message["content"]
    assert isinstance(content, list)
    assert content[0] == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": INTERRUPTED_RESULT,
        "is_error": True,
    }
    assert content[1]["text"] == "hello again"


def test_a_result_without_its_call_becomes_plain_text() -> None:
    rows = [Row(1, "user", [{"type": "tool_result", "tool_use_id": "gone", "content": "42 files"}])]
    (item,) = build_window(rows)
    block = item.message["content"][0]  # type: ignore[index]
    assert block["type"] == "text"
    assert "42 files" in block["text"]


def test_pruned_rows_show_the_cleared_marker_but_keep_their_ids() -> None:
    rows = [
        Row(1, "user", text("run it")),
        Row(2, "assistant", [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]),
        Row(3, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 5000}], pruned=True),
    ]
    items = build_window(rows)
    assert items[-1].message["content"][0]["content"] == PRUNED_MARKER  # type: ignore[index]
    assert items[-1].ids == (3,)


def test_a_window_never_starts_with_the_assistant() -> None:
    items = build_window(
        [Row(5, "assistant", text("summary of earlier turns")), Row(6, "user", text("next"))]
    )
    assert items[0].message == {"role": "user", "content": [{"type": "text", "text": CONVERSATION_START}]}
    assert items[0].ids == ()


def test_empty_text_rows_are_skipped() -> None:
    rows = [Row(1, "user", text("  ")), Row(2, "user", text("real"))]
    (item,) = build_window(rows)
    assert item.ids == (2,)
