"""From ranked message ids to what the model reads: in-scope rows of the asking chat only, an excerpt
around each one's best passage, the neighbour that completes it (a question and its answer), the
session it belongs to, and no message shown twice."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.recall_records import Passage, SearchHit, SearchRequest, SearchResult, SessionInfo
from gateway.store.records import Role
from gateway.store.rows import compactions, messages, sessions
from gateway.store.search_terms import QueryTerms, excerpt

NEIGHBOUR_CHARS = 200
_LOOKAROUND = 6
"""Rows read on each side of a hit to step over tool calls and their results."""

AnyRow = Any
"""A result row of `_COLUMNS` (attribute access by column name)."""

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


async def chat_sessions(conn: AsyncConnection, chat_pk: int) -> dict[int, SessionInfo]:
    """Every session of the chat, numbered from 1 in the order they were started."""
    rows = await conn.execute(
        select(sessions.c.id, sessions.c.active, sessions.c.created_at, sessions.c.ended_at)
        .where(sessions.c.chat_pk == chat_pk)
        .order_by(sessions.c.id)
    )
    return {
        r.id: SessionInfo(number=n, active=bool(r.active), started_at=r.created_at, ended_at=r.ended_at)
        for n, r in enumerate(rows, start=1)
    }


def passage(row: AnyRow, terms: QueryTerms, width: int) -> Passage:
    body, offset = excerpt(row.text, terms, width)
    return Passage(
        message_id=row.id,
        role=cast(Role, row.role),
        author_name=row.author_name,
        created_at=row.created_at,
        text=body,
        offset=offset,
        total_chars=len(row.text),
    )


def _is_question(text: str) -> bool:
    return text.rstrip().endswith(("?", "？"))


def _key(text: str) -> str:
    return " ".join(text.casefold().split())[:500]


class _Assembler:
    def __init__(
        self, conn: AsyncConnection, chat_pk: int, request: SearchRequest, terms: QueryTerms
    ) -> None:
        self.conn = conn
        self.chat_pk = chat_pk
        self.request = request
        self.terms = terms
        self.summaries: dict[int, set[int]] = {}

    async def rows(self, ids: Sequence[int]) -> dict[int, AnyRow]:
        if not ids:
            return {}
        result = await self.conn.execute(
            select(*_COLUMNS).where(messages.c.chat_pk == self.chat_pk, messages.c.id.in_(list(ids)))
        )
        return {r.id: r for r in result}

    async def summary_ids(self, session_pk: int) -> set[int]:
        found = self.summaries.get(session_pk)
        if found is None:
            result = await self.conn.execute(
                select(compactions.c.summary_message_id).where(
                    compactions.c.session_pk == session_pk, compactions.c.summary_message_id.is_not(None)
                )
            )
            found = self.summaries[session_pk] = {int(i) for i in result.scalars()}
        return found

    async def neighbours(self, row: AnyRow) -> tuple[AnyRow | None, AnyRow | None]:
        """The nearest said message (not a tool result, summary or empty tool call) on each side."""
        parts = []
        for state in ("archived", "active"):
            same = (messages.c.session_pk == row.session_pk, messages.c.state == state)
            parts.append(
                select(*_COLUMNS)
                .where(*same, messages.c.seq < row.seq)
                .order_by(messages.c.seq.desc())
                .limit(_LOOKAROUND)
                .subquery()
            )
            parts.append(
                select(*_COLUMNS)
                .where(*same, messages.c.seq > row.seq)
                .order_by(messages.c.seq)
                .limit(_LOOKAROUND)
                .subquery()
            )
        result = await self.conn.execute(union_all(*(select(p) for p in parts)))
        skip = await self.summary_ids(row.session_pk)
        said = [r for r in result if r.author_id != "tool" and r.text.strip() and r.id not in skip]
        before = max((r for r in said if r.seq < row.seq), key=lambda r: r.seq, default=None)
        after = min((r for r in said if r.seq > row.seq), key=lambda r: r.seq, default=None)
        return before, after

    def in_scope(self, row: AnyRow, active_session: int | None) -> bool:
        created: datetime = row.created_at
        if self.request.after is not None and created < self.request.after:
            return False
        if self.request.before is not None and created >= self.request.before:
            return False
        if row.state not in ("active", "archived") or row.author_id == "tool":
            return False
        in_window = row.session_pk == active_session and row.state == "active"
        return not (in_window and len(row.text) < self.request.shown_whole_below)


async def assemble(
    conn: AsyncConnection, chat_pk: int, ranked: Sequence[int], request: SearchRequest, terms: QueryTerms
) -> SearchResult:
    """The top `request.limit` hits of `ranked` (ids of any chat: rows of other chats are dropped)."""
    work = _Assembler(conn, chat_pk, request, terms)
    candidates = list(ranked[: max(request.limit * 4, 20)])
    rows = await work.rows(candidates)
    infos = await chat_sessions(conn, chat_pk)
    active = next((pk for pk, info in infos.items() if info.active), None)
    shown: set[int] = set()
    seen_texts: set[str] = set()
    hits: list[SearchHit] = []
    usable = [rows[i] for i in candidates if i in rows and work.in_scope(rows[i], active)]
    for row in usable:
        if row.id in shown or _key(row.text) in seen_texts:
            continue
        if len(hits) == request.limit:
            return SearchResult(hits=hits, more=True)
        before_row, after_row = await work.neighbours(row)
        # A question comes with the message after it; the answer to a question with the question.
        asks = _is_question(row.text)
        with_after = after_row is not None and asks
        with_before = before_row is not None and not asks and _is_question(before_row.text)
        width = min(NEIGHBOUR_CHARS, request.excerpt_chars)
        hit = SearchHit(
            main=passage(row, terms, request.excerpt_chars),
            session=infos[row.session_pk],
            before=passage(before_row, terms, width) if with_before and before_row is not None else None,
            after=passage(after_row, terms, width) if with_after and after_row is not None else None,
        )
        hits.append(hit)
        for shown_row in _shown(row, before_row if with_before else None, after_row if with_after else None):
            shown.add(shown_row.id)
            seen_texts.add(_key(shown_row.text))
    return SearchResult(hits=hits, more=False)


def _shown(*rows: AnyRow | None) -> Iterable[AnyRow]:
    return (r for r in rows if r is not None)
