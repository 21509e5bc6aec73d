"""When old media stop travelling with requests: only outside the last turns, only when it pays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.media import media_ref
from agent.media_aging import demotable_tokens, rows_to_demote
from agent.server_blocks import aged_note


@dataclass(frozen=True)
class Row:
    id: int
    role: str
    content: Any
    pruned: bool = False


def photo_row(row_id: int, tokens: int = 1600, *, pruned: bool = False) -> Row:
    ref = media_ref(media_id=row_id, kind="image", media_type="image/jpeg", tokens=tokens)
    return Row(row_id, "user", [ref, {"type": "text", "text": f"[photo m{row_id}]"}], pruned)


def chat(*photo_ids: int, turns: int = 10) -> list[Row]:
    rows: list[Row] = []
    for i in range(1, turns + 1):
        rows.append(photo_row(i) if i in photo_ids else Row(i, "user", "text"))
        rows.append(Row(100 + i, "assistant", "reply"))
    return rows


def test_recent_turns_keep_their_media() -> None:
    rows = chat(7, 8, 9, 10)
    assert rows_to_demote(rows, cache_cold=True, keep_turns=4, budget=1) == []


def test_a_cold_cache_demotes_whatever_is_old() -> None:
    rows = chat(1, 9)
    assert rows_to_demote(rows, cache_cold=True, keep_turns=4, budget=10_000) == [1]
    assert rows_to_demote(rows, cache_cold=False, keep_turns=4, budget=10_000) == []


def test_a_warm_cache_demotes_only_past_the_budget_and_then_all_at_once() -> None:
    rows = chat(1, 2, 3, 9)
    assert rows_to_demote(rows, cache_cold=False, keep_turns=4, budget=5_000) == []  # 4,800 tokens
    rows = chat(1, 2, 3, 4, 9)
    assert rows_to_demote(rows, cache_cold=False, keep_turns=4, budget=5_000) == [1, 2, 3, 4]


def test_already_demoted_rows_are_left_alone() -> None:
    rows = [photo_row(1, pruned=True), *chat(turns=6)[2:]]
    assert rows_to_demote(rows, cache_cold=True, keep_turns=4, budget=1) == []


def test_tool_results_do_not_count_as_turns_but_their_media_do() -> None:
    ref = media_ref(media_id=5, kind="image", media_type="image/png", tokens=700)
    result = Row(3, "user", [{"type": "tool_result", "tool_use_id": "t", "content": [ref]}])
    assert demotable_tokens(result.content) == 700
    rows = [Row(1, "user", "look"), Row(2, "assistant", [{"type": "tool_use", "id": "t"}]), result]
    rows += chat(turns=4)
    assert rows_to_demote(rows, cache_cold=True, keep_turns=4, budget=1) == [3]


def fetched(row_id: int, url: str, words: int) -> Row:
    use = {"type": "server_tool_use", "id": f"srv{row_id}", "name": "web_fetch", "input": {"url": url}}
    page = {"type": "document", "source": {"type": "text", "data": "word " * words}}
    result = {
        "type": "web_fetch_tool_result",
        "tool_use_id": f"srv{row_id}",
        "content": {"type": "web_fetch_result", "url": url, "content": page},
    }
    return Row(row_id, "assistant", [use, result, {"type": "text", "text": "The page says hello."}])


def test_a_fetched_page_ages_like_a_photo_and_its_note_names_the_address() -> None:
    rows = chat(turns=8)
    rows[1] = fetched(101, "https://docs.example.com/guide", words=8_000)
    assert demotable_tokens(rows[1].content) > 5_000
    assert rows_to_demote(rows, cache_cold=False, keep_turns=4, budget=5_000) == [101]
    assert rows_to_demote(rows[:8], cache_cold=True, keep_turns=4, budget=5_000) == []  # still recent
    small = chat(turns=8)
    small[1] = fetched(101, "https://docs.example.com/guide", words=200)
    assert rows_to_demote(small, cache_cold=False, keep_turns=4, budget=5_000) == []
    assert rows_to_demote(small, cache_cold=True, keep_turns=4, budget=5_000) == [101]
    note = aged_note(rows[1].content)
    assert "https://docs.example.com/guide" in note
    assert "fetch or search again" in note
