"""The dashboard's reads: the overview's figures, the chat list, one chat's history. Read-only; each
method is one transaction over the tables the gateway writes anyway (no figures of its own)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, and_, func, select, text

from gateway.store.db import StoreBase
from gateway.store.locks.leases import APP_PREFIX, LEASE_NAMESPACE
from gateway.store.records import ChatRecord, SessionRecord
from gateway.store.rows import chats, compactions, llm_calls, messages, sessions, to_chat, to_session
from gateway.store.tables import Delivery, JobRun

deliveries = cast(Table, Delivery.__table__)
job_runs = cast(Table, JobRun.__table__)

_LEASE_WORKERS = text(
    "SELECT a.application_name AS app, count(l.objid) AS leases FROM pg_stat_activity a "
    "LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory' AND l.granted "
    "AND l.objsubid = 2 AND l.classid::bigint = :ns "
    "WHERE a.datname = current_database() AND a.application_name LIKE :app "
    "GROUP BY a.application_name ORDER BY a.application_name"
)


@dataclass(frozen=True, slots=True)
class WorkerLine:
    name: str
    leases: int | None
    """Leases it holds (Postgres); None where there are none to hold (SQLite: one worker)."""
    last_job_at: datetime | None


@dataclass(frozen=True, slots=True)
class Overview:
    spent_today_usd: float
    spent_month_usd: float
    active_chats: int
    compactions_today: int
    prompt_tokens_today: int
    cache_read_tokens_today: int
    pending_parts: int
    workers: list[WorkerLine]


@dataclass(frozen=True, slots=True)
class ChatRow:
    chat: ChatRecord
    session: SessionRecord | None
    cost_today_usd: float
    last_activity_at: datetime | None
    person: str | None = None
    """The name the newest user message in the chat was sent under (a private chat's name)."""


@dataclass(frozen=True, slots=True)
class CallPoint:
    """One model call of a chat: when, its prompt size, what it cost and read from the cache."""

    at: datetime
    purpose: str
    prompt_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    web_lookups: int = 0
    """Web searches and fetches the call ran (the API's server tools)."""


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    id: int
    at: datetime
    trigger: str
    outcome: str
    reason: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    summary: str | None
    undone: bool
    session_pk: int


@dataclass(frozen=True, slots=True)
class MessageLine:
    at: datetime
    role: str
    author: str | None
    text: str
    state: str


class DashboardReads(StoreBase):
    async def overview(
        self, *, day_start: datetime, month_start: datetime, active_since: datetime
    ) -> Overview:
        calls_today = and_(llm_calls.c.created_at >= day_start)
        async with self._tx("dashboard_overview") as conn:
            today = (
                await conn.execute(
                    select(
                        func.coalesce(func.sum(llm_calls.c.cost_usd), 0.0),
                        func.coalesce(
                            func.sum(
                                llm_calls.c.input_tokens
                                + llm_calls.c.cache_read_tokens
                                + llm_calls.c.cache_creation_tokens
                            ),
                            0,
                        ),
                        func.coalesce(func.sum(llm_calls.c.cache_read_tokens), 0),
                    ).where(calls_today)
                )
            ).one()
            month = (
                await conn.execute(
                    select(func.coalesce(func.sum(llm_calls.c.cost_usd), 0.0)).where(
                        llm_calls.c.created_at >= month_start
                    )
                )
            ).scalar_one()
            active = (
                await conn.execute(
                    select(func.count()).where(sessions.c.active, sessions.c.last_activity_at >= active_since)
                )
            ).scalar_one()
            compacted = (
                await conn.execute(
                    select(func.count()).where(
                        compactions.c.created_at >= day_start, compactions.c.outcome.in_(("ok", "degraded"))
                    )
                )
            ).scalar_one()
            pending = (
                await conn.execute(select(func.count()).where(deliveries.c.state.in_(("pending", "sending"))))
            ).scalar_one()
            workers = await self._workers(conn)
        return Overview(
            spent_today_usd=float(today[0]),
            spent_month_usd=float(month),
            active_chats=int(active),
            compactions_today=int(compacted),
            prompt_tokens_today=int(today[1]),
            cache_read_tokens_today=int(today[2]),
            pending_parts=int(pending),
            workers=workers,
        )

    async def _workers(self, conn: Any) -> list[WorkerLine]:
        last_jobs = {
            str(r.worker): r.last_run_at
            for r in (
                await conn.execute(
                    select(job_runs.c.worker, func.max(job_runs.c.last_run_at).label("last_run_at")).group_by(
                        job_runs.c.worker
                    )
                )
            ).all()
        }
        if self.dialect != "postgresql":
            return [WorkerLine(name, None, at) for name, at in sorted(last_jobs.items())]
        rows = (await conn.execute(_LEASE_WORKERS, {"ns": LEASE_NAMESPACE, "app": APP_PREFIX + "%"})).all()
        found = [
            WorkerLine(
                str(r.app).removeprefix(APP_PREFIX),
                int(r.leases),
                last_jobs.get(str(r.app).removeprefix(APP_PREFIX)),
            )
            for r in rows
        ]
        named = {w.name for w in found}
        found += [WorkerLine(name, 0, at) for name, at in sorted(last_jobs.items()) if name not in named]
        return found

    async def chats(self, *, day_start: datetime) -> list[ChatRow]:
        cost = (
            select(llm_calls.c.chat_pk, func.sum(llm_calls.c.cost_usd).label("cost"))
            .where(llm_calls.c.created_at >= day_start)
            .group_by(llm_calls.c.chat_pk)
            .subquery()
        )
        query = select(chats, cost.c.cost).outerjoin(cost, cost.c.chat_pk == chats.c.id).order_by(chats.c.id)
        async with self._tx("dashboard_chats") as conn:
            rows = (await conn.execute(query)).all()
            active = {
                r.chat_pk: to_session(r)
                for r in (await conn.execute(select(sessions).where(sessions.c.active))).all()
            }
            people = await _people(conn, None)
        found = []
        for row in rows:
            session = active.get(row.id)
            found.append(
                ChatRow(
                    chat=to_chat(row),
                    session=session,
                    cost_today_usd=float(row.cost or 0.0),
                    last_activity_at=session.last_activity_at if session else None,
                    person=people.get(row.id),
                )
            )
        found.sort(key=lambda c: c.last_activity_at or c.chat.created_at, reverse=True)
        return found

    async def chat(self, chat_pk: int) -> ChatRow | None:
        async with self._tx("dashboard_chat") as conn:
            row = (await conn.execute(select(chats).where(chats.c.id == chat_pk))).one_or_none()
            if row is None:
                return None
            session_row = (
                await conn.execute(select(sessions).where(sessions.c.chat_pk == chat_pk, sessions.c.active))
            ).one_or_none()
            people = await _people(conn, chat_pk)
        session = to_session(session_row) if session_row is not None else None
        return ChatRow(
            to_chat(row), session, 0.0, session.last_activity_at if session else None, people.get(chat_pk)
        )

    async def chats_by_pk(self, chat_pks: Collection[int]) -> dict[int, ChatRecord]:
        """The chats named by their keys (the overview's reminders name their chats)."""
        if not chat_pks:
            return {}
        async with self._tx("dashboard_chats_by_pk") as conn:
            rows = (await conn.execute(select(chats).where(chats.c.id.in_(list(chat_pks))))).all()
        return {row.id: to_chat(row) for row in rows}

    async def calls(self, chat_pk: int, *, since: datetime) -> list[CallPoint]:
        query = (
            select(llm_calls)
            .where(llm_calls.c.chat_pk == chat_pk, llm_calls.c.created_at >= since)
            .order_by(llm_calls.c.created_at, llm_calls.c.id)
        )
        async with self._tx("dashboard_calls") as conn:
            rows = (await conn.execute(query)).all()
        return [
            CallPoint(
                at=r.created_at,
                purpose=r.purpose,
                prompt_tokens=r.input_tokens + r.cache_read_tokens + r.cache_creation_tokens,
                cache_read_tokens=r.cache_read_tokens,
                cache_write_tokens=r.cache_creation_tokens,
                cost_usd=float(r.cost_usd),
                web_lookups=r.web_searches + r.web_fetches,
            )
            for r in rows
        ]

    async def compactions(self, chat_pk: int, *, limit: int = 50) -> list[CompactionEvent]:
        query = (
            select(compactions, messages.c.text.label("summary_text"))
            .outerjoin(messages, messages.c.id == compactions.c.summary_message_id)
            .where(compactions.c.chat_pk == chat_pk)
            .order_by(compactions.c.created_at.desc(), compactions.c.id.desc())
            .limit(limit)
        )
        async with self._tx("dashboard_compactions") as conn:
            rows = (await conn.execute(query)).all()
        return [
            CompactionEvent(
                id=r.id,
                at=r.created_at,
                trigger=r.trigger,
                outcome=r.outcome,
                reason=r.reason,
                tokens_before=r.tokens_before,
                tokens_after=r.tokens_after,
                messages_before=r.messages_before,
                messages_after=r.messages_after,
                summary=r.summary_text,
                undone=bool(r.undone),
                session_pk=r.session_pk,
            )
            for r in rows
        ]

    async def recent_messages(self, chat_pk: int, *, limit: int = 50) -> list[MessageLine]:
        query = (
            select(
                messages.c.created_at,
                messages.c.role,
                messages.c.author_name,
                messages.c.text,
                messages.c.state,
            )
            .where(messages.c.chat_pk == chat_pk)
            .order_by(messages.c.id.desc())
            .limit(limit)
        )
        async with self._tx("dashboard_messages") as conn:
            rows = (await conn.execute(query)).all()
        return [MessageLine(r.created_at, r.role, r.author_name, r.text, r.state) for r in rows]


async def _people(conn: Any, chat_pk: int | None) -> dict[int, str]:
    """chat -> the author name of its newest user message (all chats, or one)."""
    newest = select(func.max(messages.c.id)).where(
        messages.c.role == "user", messages.c.author_name.is_not(None)
    )
    if chat_pk is not None:
        newest = newest.where(messages.c.chat_pk == chat_pk)
    query = select(messages.c.chat_pk, messages.c.author_name).where(
        messages.c.id.in_(newest.group_by(messages.c.chat_pk).scalar_subquery())
    )
    return {int(r.chat_pk): str(r.author_name) for r in (await conn.execute(query)).all()}
