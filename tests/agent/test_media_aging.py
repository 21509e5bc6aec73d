"""When old media stop travelling with requests: only outside the last turns, only when it pays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.media import media_ref
from agent.media_aging import media_tokens, rows_to_demote


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
    assert media_tokens(result.content) == 700
    rows = [Row(1, "user", "look"), Row(2, "assistant", [{"type": "tool_use", "id": "t"}]), result]
    rows += chat(turns=4)
    assert rows_to_demote(rows, cache_cold=True, keep_turns=4, budget=1) == [3]
