"""Keyword ranking on Postgres: BM25 computed over the `search_docs` GIN index of migration 0005.

`ts_rank_cd` has no inverse document frequency, so a common word repeated would outrank a rare one; the
query instead scores each matching message as BM25 does with binary term frequency (chat messages are
short): the sum, over the query terms it contains, of ln(1 + (N - df + 0.5) / (df + 0.5)), where N is the
number of indexed messages of the chat and df the number of them holding the term, scaled by the
message's length against the average length of the matches. One statement; df comes from the matches.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.models import UTCDateTime
from gateway.store.search_sqlite import window_ids_sql
from gateway.store.search_terms import QueryTerms

K1 = 1.2
B = 0.75


WORDS_CONFIG = "search_english"
"""English stemming with accents folded (migration 0005); grams use pg_catalog.simple."""


def _tsquery(i: int, config: str) -> str:
    return f"plainto_tsquery('{config}', :t{i})"


async def ranked_list(
    conn: AsyncConnection,
    terms: QueryTerms,
    *,
    chat_pk: int,
    after: Any,
    before: Any,
    shown_below: int,
    depth: int,
) -> list[int]:
    """Message ids of the chat matching any term, best first."""
    queries = [_tsquery(i, WORDS_CONFIG) for i in range(len(terms.words))]
    queries += [_tsquery(len(terms.words) + i, "pg_catalog.simple") for i in range(len(terms.grams))]
    params: dict[str, Any] = {f"t{i}": term for i, term in enumerate(terms.all())}
    if not queries:
        return []
    where = ""
    binds = []
    if after is not None:
        where += " AND d.created_at >= :after"
        binds.append(bindparam("after", after, type_=UTCDateTime()))
    if before is not None:
        where += " AND d.created_at < :before"
        binds.append(bindparam("before", before, type_=UTCDateTime()))
    any_term = " || ".join(queries)
    dfs = ", ".join(f"count(*) FILTER (WHERE doc @@ {q}) AS df{i}" for i, q in enumerate(queries))
    idf = " + ".join(
        f"CASE WHEN h.doc @@ {q} THEN ln(1.0 + (t.n - s.df{i} + 0.5) / (s.df{i} + 0.5)) ELSE 0.0 END"
        for i, q in enumerate(queries)
    )
    norm = f"({K1 + 1} / (1.0 + {K1} * (1.0 - {B} + {B} * h.len / greatest(s.avglen, 1.0))))"
    statement = text(
        f"""WITH hits AS MATERIALIZED (
            SELECT d.message_id, d.doc, length(d.doc)::float8 AS len FROM search_docs d
            WHERE d.chat_pk = :chat AND d.doc @@ ({any_term}){where}
              AND d.message_id NOT IN ({window_ids_sql()})
        ),
        stats AS (SELECT avg(len) AS avglen, {dfs} FROM hits),
        total AS (SELECT count(*)::float8 AS n FROM search_docs WHERE chat_pk = :chat)
        SELECT h.message_id AS id, ({idf}) * {norm} AS score
        FROM hits h CROSS JOIN stats s CROSS JOIN total t
        ORDER BY score DESC, h.message_id DESC LIMIT :depth"""  # noqa: S608 - constants, bound values
    ).bindparams(*binds)
    params.update({"chat": chat_pk, "shown_below": shown_below, "depth": depth})
    rows = await conn.execute(statement, params)
    return [int(r.id) for r in rows]
