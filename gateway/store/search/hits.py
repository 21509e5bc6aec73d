"""From ranked message ids to what the model reads: in-scope rows of the asking chat only, an excerpt
around each one's best passage, the neighbour that completes it (a question and its answer), the
session it belongs to, and no message shown twice.

"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, literal_column, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.tools.recall_types import Excerpt, RecallHit, RecallQuery, RecallResults, SessionLabel
from gateway.store.messages.window import SEQ_STEP
from gateway.store.rows import compactions, messages, sessions
from gateway.store.search.scope import Scope, admits_row
from gateway.store.search.terms import QueryTerms, excerpt

_WORDS = re.compile(r"\w+")
NEIGHBOUR_CHARS = 200
CANDIDATES = 50
"""Best-ranked candidates read (many chats repeat short messages, which dedupe to one)."""
_REACH = 4 * SEQ_STEP
"""How far (in seq) to look on each side of a hit for its neighbours, past a tool call and its result."""

AnyRow = Any
"""A result row of `_COLUMNS` (attribute access by column name)."""

_STRETCH = (
    "SELECT {k} AS k, id, session_pk, seq, role, author_id, author_name, created_at, text, state "
    "FROM messages WHERE session_pk = :s{k} AND state IN ('active', 'archived') "
    "AND seq BETWEEN :lo{k} AND :hi{k}"
)
"""One hit's stretch of its session (the neighbours query joins one per hit with UNION ALL)."""
_COLUMNS = (
    messages.c.id,
    messages.c.session_pk,
    messages.c.seq,
    messages.c.role,
    messages.c.author_id,
    messages.c.author_name,
    messages.c.created_at,
    messages.c.text,
    messages.c.state,
)


async def chat_sessions(conn: AsyncConnection, chat_pk: int) -> dict[int, SessionLabel]:
    """Every session of the chat, numbered from 1 in the order they were started."""
    rows = await conn.execute(
        select(sessions.c.id, sessions.c.active, sessions.c.ended_at)
        .where(sessions.c.chat_pk == chat_pk)
        .order_by(sessions.c.id)
    )
    return {
        r.id: SessionLabel(number=n, active=bool(r.active), ended_at=r.ended_at)
        for n, r in enumerate(rows, start=1)
    }


def passage(row: AnyRow, terms: QueryTerms, width: int) -> Excerpt:
    body, offset = excerpt(row.text, terms, width)
    return Excerpt(
        message_id=row.id,
        role=row.role,
        author_name=row.author_name,
        created_at=row.created_at,
        text=body,
        offset=offset,
        total_chars=len(row.text),
    )


def _is_question(text: str) -> bool:
    return text.rstrip().endswith(("?", "？"))


def _key(row: AnyRow) -> tuple[str | None, str]:
    """Rows are duplicates when one author said the same words again (punctuation aside), not when
    two people did."""
    return row.author_id, " ".join(_WORDS.findall(row.text.casefold()))[:500]


class _Assembler:
    def __init__(
        self,
        conn: AsyncConnection,
        chat_pk: int,
        query: RecallQuery,
        terms: QueryTerms,
        *,
        shown_whole_below: int,
    ) -> None:
        self.conn = conn
        self.chat_pk = chat_pk
        self.query = query
        self.shown_whole_below = shown_whole_below
        self.terms = terms
        self.scope = Scope(chat_pk, query.after, query.before, shown_whole_below)
        self._summaries: set[int] | None = None

    async def rows(self, ids: Sequence[int]) -> dict[int, AnyRow]:
        if not ids:
            return {}
        result = await self.conn.execute(
            select(*_COLUMNS).where(messages.c.id.in_(list(ids)), messages.c.chat_pk == self.chat_pk)
        )
        return {r.id: r for r in result}

    async def summary_ids(self) -> set[int]:
        if self._summaries is None:
            result = await self.conn.execute(
                select(compactions.c.summary_message_id).where(
                    compactions.c.chat_pk == self.chat_pk, compactions.c.summary_message_id.is_not(None)
                )
            )
            self._summaries = {int(i) for i in result.scalars()}
        return self._summaries

    async def neighbours(self, hits: Sequence[AnyRow]) -> dict[int, tuple[AnyRow | None, AnyRow | None]]:
        """For each hit, the nearest said message (not a tool result, summary or empty tool call) on
        each side in its session, read in one statement."""
        if not hits:
            return {}
        # One statement: each hit's stretch of its session, tagged with the hit's position.
        params: dict[str, Any] = {}
        parts = []
        for k, row in enumerate(hits):
            params.update({f"s{k}": row.session_pk, f"lo{k}": row.seq - _REACH, f"hi{k}": row.seq + _REACH})
            parts.append(_STRETCH.format(k=k))
        # Typed like the table's columns (SQLite hands back text for a plain SELECT of a date).
        statement = text(" UNION ALL ".join(parts)).columns(literal_column("k", Integer), *_COLUMNS)
        nearby = await self.conn.execute(statement, params)
        skip = await self.summary_ids()
        by_hit: dict[int, list[AnyRow]] = {}
        for r in nearby:
            if r.author_id != "tool" and r.text.strip() and r.id not in skip:
                by_hit.setdefault(int(r.k), []).append(r)
        found = {}
        for k, row in enumerate(hits):
            near = by_hit.get(k, [])
            before = max((r for r in near if r.seq < row.seq), key=lambda r: r.seq, default=None)
            after = min((r for r in near if r.seq > row.seq), key=lambda r: r.seq, default=None)
            found[row.id] = (before, after)
        return found

    def in_scope(self, row: AnyRow, active_session: int | None) -> bool:
        return admits_row(self.scope, row, active_session)


async def assemble(
    conn: AsyncConnection,
    chat_pk: int,
    ranked: Sequence[tuple[int, float]],
    query: RecallQuery,
    terms: QueryTerms,
    *,
    shown_whole_below: int,
) -> RecallResults:
    """The top `query.limit` hits of `ranked` ((id, score) of any chat: other chats' rows are dropped)."""
    work = _Assembler(conn, chat_pk, query, terms, shown_whole_below=shown_whole_below)
    top = ranked[: max(query.limit * 5, CANDIDATES)]
    rows = await work.rows([i for i, _ in top])
    infos = await chat_sessions(conn, chat_pk)
    active = next((pk for pk, info in infos.items() if info.active), None)
    usable = [rows[i] for i, _ in top if i in rows and work.in_scope(rows[i], active)]
    around = await work.neighbours(usable[: query.limit * 3])
    shown: set[int] = set()
    seen_texts: set[tuple[str | None, str]] = set()
    hits: list[RecallHit] = []
    for row in usable:
        if row.id in shown or _key(row) in seen_texts:
            continue
        if len(hits) == query.limit:
            return RecallResults(hits=hits, more=True)
        before_row, after_row = around.get(row.id) or (await work.neighbours([row]))[row.id]
        # A question comes with the message after it; the answer to a question with the question.
        asks = _is_question(row.text)
        if not asks or after_row is None:
            after_row = None
        if asks or before_row is None or not _is_question(before_row.text):
            before_row = None
        width = min(NEIGHBOUR_CHARS, query.excerpt_chars)
        hits.append(
            RecallHit(
                main=passage(row, terms, query.excerpt_chars),
                session=infos[row.session_pk],
                before=None if before_row is None else passage(before_row, terms, width),
                after=None if after_row is None else passage(after_row, terms, width),
            )
        )
        for shown_row in (row, before_row, after_row):
            if shown_row is not None:
                shown.add(shown_row.id)
                seen_texts.add(_key(shown_row))
    return RecallResults(hits=hits, more=False)
