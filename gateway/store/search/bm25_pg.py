"""Keyword ranking on Postgres: BM25 computed over the `search_docs` GIN index of migration 0005.

`ts_rank_cd` has no inverse document frequency, so a common word repeated would outrank a rare one; the
query instead scores each matching message as BM25 does with binary term frequency (chat messages are
short): the sum, over the query terms it holds, of ln(1 + (N - df + 0.5) / (df + 0.5)), scaled by the
message's length against the average length of the matches. N is the index's size as the planner last
estimated it (counting would read every row), df the number of the chat's matches holding the term.

Reading every message that holds a common word ("need", "good") is what makes a query slow, and such a
word barely moves the ranking. So words that ANALYZE found in more than COMMON_SHARE of the messages
(`pg_stats.most_common_elems`, cached per process for STATS_TTL_S) do not select candidates when the
query has rarer words; they still score the candidates that hold them, with their df estimated from
that share. Without statistics (a fresh database) every word selects candidates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.search.scope import dates_sql, window_ids_sql
from gateway.store.search.shared_sql import author_factor
from gateway.store.search.terms import QueryTerms

K1 = 1.2
B = 0.75
COMMON_SHARE = 0.01
WORDS_CONFIG = "search_english"
"""English stemming with accents folded (migration 0005); grams use pg_catalog.simple."""

_N = "(SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = 'search_docs'::regclass)"
_MCE = """SELECT x.e, x.f FROM pg_stats s,
    unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS x(e, f)
    WHERE s.schemaname = current_schema() AND s.tablename = 'search_docs' AND s.attname = 'doc'
      AND x.e IS NOT NULL"""
_NAMES = "ARRAY(SELECT name FROM search_authors WHERE chat_pk = :chat)"
STATS_TTL_S = 300.0
"""How long a process reuses the common-word statistics (ANALYZE changes them slowly)."""
_common: dict[str, tuple[float, dict[str, float]]] = {}


@dataclass(frozen=True, slots=True)
class Prelude:
    """What the ranking needs before it runs, read in one round trip."""

    participants: list[str]
    lexemes: dict[str, list[str]]
    n: float


def _config(terms: QueryTerms, i: int) -> str:
    return WORDS_CONFIG if i < len(terms.words) else "pg_catalog.simple"


async def prelude(conn: AsyncConnection, chat_pk: int, terms: QueryTerms) -> Prelude:
    """The chat's authors, each term's lexemes as the index stores them, and N."""
    columns = "".join(
        f", tsvector_to_array(to_tsvector('{_config(terms, i)}', :t{i})) AS l{i}"
        for i in range(len(terms.all()))
    )
    row = (
        await conn.execute(
            text(f"SELECT {_NAMES} AS names, {_N} AS n{columns}"),
            {"chat": chat_pk, **{f"t{i}": t for i, t in enumerate(terms.all())}},
        )
    ).one()
    lexemes = {t: list(getattr(row, f"l{i}") or []) for i, t in enumerate(terms.all())}
    return Prelude(participants=list(row.names or []), lexemes=lexemes, n=float(row.n or 0.0))


async def common_words(conn: AsyncConnection) -> dict[str, float]:
    """Lexeme -> share of indexed messages holding it, for the words ANALYZE found most common."""
    key = str(conn.engine.url)
    cached = _common.get(key)
    now = time.monotonic()
    if cached is not None and cached[0] > now:
        return cached[1]
    rows = await conn.execute(text(_MCE))
    shares = {str(r.e): float(r.f) for r in rows}
    _common[key] = (now + STATS_TTL_S, shares)
    return shares


async def ranked_list(
    conn: AsyncConnection,
    terms: QueryTerms,
    *,
    chat_pk: int,
    after: Any,
    before: Any,
    shown_below: int,
    depth: int,
    authors: tuple[str, ...] = (),
    known: Prelude,
) -> list[int]:
    """Message ids of the chat matching any term, best first; messages by `authors` rank higher."""
    count = len(terms.all())
    if not count:
        return []
    common_shares = await common_words(conn)
    shares = [
        max((common_shares.get(lexeme, 0.0) for lexeme in known.lexemes.get(term, [])), default=0.0)
        for term in terms.all()
    ]
    n = known.n
    queries = [f"plainto_tsquery('{_config(terms, i)}', :t{i})" for i in range(count)]
    common = {i for i, share in enumerate(shares) if share > COMMON_SHARE}
    selecting = [q for i, q in enumerate(queries) if i not in common] or queries
    params: dict[str, Any] = {f"t{i}": term for i, term in enumerate(terms.all())}
    params.update({f"share{i}": shares[i] for i in common})
    where, binds = dates_sql("d.created_at", after, before)
    matched = ", ".join(f"(d.doc @@ {q})::int AS m{i}" for i, q in enumerate(queries))
    # N is at least the number of matches (the estimate is 0 before the first ANALYZE).
    n_all = "greatest(CAST(:n_est AS float8), count(*))"

    def df(i: int) -> str:
        return f"(CAST(:share{i} AS float8) * {n_all})" if i in common else f"sum(m{i})"

    idfs = ", ".join(
        f"ln(1.0 + greatest({n_all} - {df(i)} + 0.5, 0.5) / ({df(i)} + 0.5)) AS idf{i}" for i in range(count)
    )
    idf = " + ".join(f"h.m{i} * s.idf{i}" for i in range(count))
    norm = f"({K1 + 1} / (1.0 + {K1} * (1.0 - {B} + {B} * h.len / greatest(s.avglen, 1.0))))"
    factor, names = author_factor("h.author", authors)
    params.update(names)
    statement = text(
        f"""WITH hits AS MATERIALIZED (
            SELECT d.message_id, d.author, length(d.doc)::float8 AS len, {matched} FROM search_docs d
            WHERE d.chat_pk = :chat AND d.doc @@ ({" || ".join(selecting)}){where}
              AND d.message_id NOT IN ({window_ids_sql()})
        ),
        stats AS MATERIALIZED (SELECT avg(len) AS avglen, {idfs} FROM hits)
        SELECT h.message_id AS id, ({idf}) * {norm} * {factor} AS score
        FROM hits h CROSS JOIN stats s
        ORDER BY score DESC, h.message_id DESC LIMIT :depth"""  # noqa: S608 - constants, bound values
    ).bindparams(*binds)
    params.update({"chat": chat_pk, "shown_below": shown_below, "depth": depth, "n_est": n})
    rows = await conn.execute(statement, params)
    return [int(r.id) for r in rows]
