"""Recall search over one chat's whole history, never another chat's.

Scope (`scope.py`, shared with the semantic side): every message of the chat that people or the
assistant wrote, in all its sessions: archived by compaction, left behind by `/new`, and in the current
window when the model may see it shortened; messages the model sees whole right now are skipped.
Ranking: BM25 on the database's full-text index (`search_sqlite`, `search_pg`), fused by weighted
reciprocal rank with any semantic ranking the caller brings (in-scope message ids by similarity).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.tools.recall_types import RecallQuery, RecallResults
from gateway.store.search import bm25_pg as search_pg
from gateway.store.search import bm25_sqlite as search_sqlite
from gateway.store.search.hits import assemble
from gateway.store.search.terms import analyze, split_authors

RRF_K = 60
"""Reciprocal rank fusion constant: a list's rank r adds weight / (RRF_K + r)."""
MIN_DEPTH = 50


def fuse(lists: Sequence[tuple[Sequence[int], float]], *, k: int = RRF_K) -> list[tuple[int, float]]:
    """(id, score) ordered by weighted reciprocal rank fusion of several best-first lists."""
    scores: dict[int, float] = defaultdict(float)
    for ids, weight in lists:
        for rank, message_id in enumerate(ids, start=1):
            scores[message_id] += weight / (k + rank)
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)


async def keyword_lists(
    conn: AsyncConnection, dialect: str, chat_pk: int, query: RecallQuery, *, shown_whole_below: int
) -> list[tuple[list[int], float]]:
    """Best-first message ids from the full-text index, with their fusion weights."""
    analyzed = analyze(query.text)
    if analyzed.empty:
        return []
    depth = max(MIN_DEPTH, query.limit * 5)
    if dialect == "postgresql":
        known = await search_pg.prelude(conn, chat_pk, analyzed)
        terms, authors = split_authors(analyzed, known.participants)
        ranked = await search_pg.ranked_list(
            conn,
            terms,
            chat_pk=chat_pk,
            after=query.after,
            before=query.before,
            shown_below=shown_whole_below,
            depth=depth,
            authors=authors,
            known=known,
        )
        return [(ranked, 1.0)]
    terms, authors = split_authors(analyzed, await participants(conn, chat_pk))
    return await search_sqlite.ranked_lists(
        conn,
        terms,
        chat_pk=chat_pk,
        after=query.after,
        before=query.before,
        shown_below=shown_whole_below,
        depth=depth,
        authors=authors,
    )


async def participants(conn: AsyncConnection, chat_pk: int) -> list[str]:
    """Names that have written in the chat (kept by the index's insert trigger)."""
    rows = await conn.execute(
        text("SELECT name FROM search_authors WHERE chat_pk = :chat"), {"chat": chat_pk}
    )
    return [str(r.name) for r in rows]


async def search_history(
    conn: AsyncConnection,
    dialect: str,
    chat_pk: int,
    query: RecallQuery,
    *,
    semantic: Sequence[int] = (),
    semantic_weight: float = 1.0,
    shown_whole_below: int,
) -> RecallResults:
    """The chat's best-matching messages for `query`; `semantic` adds a vector-similarity ranking
    weighing `semantic_weight` (each keyword list weighs at most 1)."""
    if query.limit <= 0:
        return RecallResults()
    lists = await keyword_lists(conn, dialect, chat_pk, query, shown_whole_below=shown_whole_below)
    ranked = fuse(lists)
    if semantic:
        ranked = keyword_leads(ranked, fuse([*lists, (list(semantic), semantic_weight)]))
    terms = analyze(query.text)
    return await assemble(conn, chat_pk, ranked, query, terms, shown_whole_below=shown_whole_below)


def keyword_leads(
    keyword: list[tuple[int, float]], fused: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """The fused ranking with the best keyword match kept first: similarity finds what other words
    say (the places after it, or all of them when no word matched), but measured on real models it
    also lifts near-misses above an exact match, which cost first places (BENCHMARKS.md §8)."""
    if not keyword:
        return fused
    lead = keyword[0][0]
    return [next(item for item in fused if item[0] == lead), *(item for item in fused if item[0] != lead)]
