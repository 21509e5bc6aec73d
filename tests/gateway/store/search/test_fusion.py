"""Fusing the keyword ranking with the semantic one: the best keyword match keeps first place."""

from __future__ import annotations

from gateway.store.search.query import fuse, keyword_leads


def test_semantic_ranking_fills_places_but_never_takes_the_first_from_a_keyword_match() -> None:
    keyword = [([1, 2, 3], 1.0)]
    semantic = ([9, 8, 2, 3], 1.0)
    fused = fuse([*keyword, semantic])
    assert fused[0][0] == 2  # plain fusion: found by both, it overtakes the exact match
    ordered = [i for i, _ in keyword_leads(fuse(keyword), fused)]
    assert ordered[0] == 1
    assert set(ordered) == {1, 2, 3, 8, 9}
    # No keyword match at all: the semantic ranking decides every place.
    assert [i for i, _ in keyword_leads([], fuse([semantic]))] == [9, 8, 2, 3]
