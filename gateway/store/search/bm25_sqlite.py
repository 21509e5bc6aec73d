"""Keyword ranking on SQLite: BM25 over the FTS5 tables kept by migration 0005's triggers.

Words go to `search_words` (Porter-stemmed Unicode words); unsegmented text goes to
`search_grams` (trigrams). FTS5 cannot match fewer than three characters of trigrams, so a two-character
piece is looked up as every indexed trigram that starts with it (`search_grams_vocab`); each gram row
ends in a newline, so a piece at the very end of a message starts a trigram too. Longer words are also
matched as substrings in `search_grams`, which finds "Python" inside "用Python写代码".
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.search.scope import dates_sql, window_ids_sql
from gateway.store.search.shared_sql import author_factor
from gateway.store.search.terms import QueryTerms

EXPANSIONS_PER_GRAM = 64
MAX_EXPANSIONS = 256


def _phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


async def _ranked(
    conn: AsyncConnection,
    table: str,
    score: str,
    match: str,
    *,
    chat_pk: int,
    after: Any,
    before: Any,
    shown_below: int,
    depth: int,
    authors: tuple[str, ...],
) -> list[int]:
    where, params = dates_sql("m.created_at", after, before)
    factor, names = author_factor("m.author_name", authors)
    # CROSS JOIN keeps the full-text match as the outer loop (SQLite never reorders it).
    statement = text(
        f"SELECT {table}.rowid AS id, {score} * {factor} AS score FROM {table} "  # noqa: S608 - constants, bound values
        f"CROSS JOIN messages AS m ON m.id = {table}.rowid "
        f"WHERE {table} MATCH :match AND m.chat_pk = :chat{where} "
        f"AND {table}.rowid NOT IN ({window_ids_sql()}) "
        "ORDER BY score LIMIT :depth"
    ).bindparams(*params)
    rows = await conn.execute(
        statement, {"match": match, "chat": chat_pk, "shown_below": shown_below, "depth": depth, **names}
    )
    return [int(r.id) for r in rows]


async def _gram_expansions(conn: AsyncConnection, grams: tuple[str, ...]) -> list[str]:
    """Indexed trigrams that start with each gram, most widespread first."""
    if not grams:
        return []
    parts = []
    params: dict[str, Any] = {"per_gram": EXPANSIONS_PER_GRAM}
    for i, gram in enumerate(grams):
        params[f"lo{i}"] = gram
        params[f"hi{i}"] = gram[:-1] + chr(ord(gram[-1]) + 1)
        parts.append(
            "SELECT * FROM (SELECT term, doc FROM search_grams_vocab "  # noqa: S608 - constants, bound values
            f"WHERE term >= :lo{i} AND term < :hi{i} ORDER BY doc DESC LIMIT :per_gram)"
        )
    rows = await conn.execute(text(" UNION ALL ".join(parts)), params)
    return list(dict.fromkeys(str(r.term) for r in rows))[:MAX_EXPANSIONS]


async def ranked_lists(
    conn: AsyncConnection,
    terms: QueryTerms,
    *,
    chat_pk: int,
    after: Any,
    before: Any,
    shown_below: int,
    depth: int,
    authors: tuple[str, ...] = (),
) -> list[tuple[list[int], float]]:
    """(message ids best first, fusion weight) for the word index and the gram index; messages by
    `authors` rank higher (bm25 is negative: a larger factor is better)."""
    scope: dict[str, Any] = {
        "chat_pk": chat_pk,
        "after": after,
        "before": before,
        "shown_below": shown_below,
        "depth": depth,
        "authors": authors,
    }
    lists: list[tuple[list[int], float]] = []
    if terms.words:
        match = " OR ".join(_phrase(w) for w in terms.words)
        lists.append((await _ranked(conn, "search_words", "bm25(search_words)", match, **scope), 1.0))
    phrases = await _gram_expansions(conn, terms.grams)
    phrases += [w for w in terms.words if len(w) >= 3]
    if phrases:
        match = " OR ".join(_phrase(p) for p in phrases)
        ids = await _ranked(conn, "search_grams", "bm25(search_grams)", match, **scope)
        # Without grams in the query this list only adds words found inside unsegmented text.
        lists.append((ids, 1.0 if terms.grams else 0.5))
    return lists
