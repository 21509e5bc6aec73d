"""Shared instruments for the load, hostile-input and security tests.

`load_env` is a Telegram gateway open to every user with the abuse limits lifted. `TimedAnthropic`
records when each reply request started and finished, so a test can prove that no two turns of one chat
overlapped. `stored_messages` reads what the gateway committed, straight from
the database, so assertions are about data that survived, not about what the process said.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.e2e.harness import base_env
from tests.fakes.anthropic import FakeAnthropic, RecordedRequest
from tests.fakes.telegram import FakeTelegram

LOAD_TOKEN = "123456:LOAD-token-abcdefghijklmnopqrstuvwxyz"

MARKER = re.compile(r"\bc(\d+)m(\d+)\b")
"""Test messages carry `c<chat>m<n>` so a request body tells which chat it belongs to."""


@dataclass(slots=True)
class Span:
    start: float
    end: float
    record: RecordedRequest

    @property
    def body_text(self) -> str:
        return json.dumps(self.record.body, ensure_ascii=False)

    def chats(self) -> set[int]:
        return {int(m.group(1)) for m in MARKER.finditer(self.body_text)}


class TimedAnthropic(FakeAnthropic):
    """The fake Anthropic API, also recording each request's start and end on the monotonic clock."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spans: list[Span] = []

    async def __aenter__(self) -> TimedAnthropic:
        await self.start()
        return self

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        index = len(self.requests)  # the parent appends this request's record before its first await
        start = time.monotonic()
        response = await super()._messages(request)
        self.spans.append(Span(start, time.monotonic(), self.requests[index]))
        return response

    def reply_spans(self) -> list[Span]:
        return [s for s in self.spans if s.record.kind == "reply"]


def load_env(pg_url: str, llm: FakeAnthropic, tg: FakeTelegram, tmp: Path, **extra: str) -> dict[str, str]:
    """A Telegram gateway that answers anyone, with the abuse limits out of the way of a load."""
    return base_env(
        database_url=pg_url,
        anthropic_url=llm.base_url,
        tmp=tmp,
        TELEGRAM_BOT_TOKEN=LOAD_TOKEN,
        TELEGRAM_BASE_URL=tg.base_url,
        GATEWAY_ALLOW_ALL_USERS="true",
        LIMITS__USER_MESSAGES_PER_MINUTE="100000",
        LIMITS__CHAT_DAILY_BUDGET_USD="0",
        **extra,
    )


def overlapping(spans: list[Span]) -> list[tuple[Span, Span]]:
    """Pairs of spans whose time intervals intersect."""
    ordered = sorted(spans, key=lambda s: s.start)
    return [(a, b) for a, b in itertools.pairwise(ordered) if b.start < a.end]


@dataclass(frozen=True, slots=True)
class Row:
    id: int
    chat_id: str
    seq: int
    session_pk: int
    role: str
    text: str
    author_id: str | None
    platform_message_id: str | None
    state: str
    needs_reply: bool
    replied: bool


async def stored_messages(db_url: str, *, platform: str | None = None) -> list[Row]:
    """Every stored message (all sessions, active and archived), ordered by chat, session and seq."""
    engine = create_async_engine(db_url)
    try:
        async with engine.connect() as conn:
            result = await conn.execute(
                text(
                    "SELECT m.id, c.chat_id, m.seq, m.session_pk, m.role, m.text, m.author_id, "
                    "m.platform_message_id, m.state, m.needs_reply, m.replied "
                    "FROM messages m JOIN chats c ON c.id = m.chat_pk "
                    + ("WHERE c.platform = :platform " if platform else "")
                    + "ORDER BY c.id, m.session_pk, m.seq"
                ),
                {"platform": platform} if platform else {},
            )
            return [Row(*(r[i] for i in range(11))) for r in result]
    finally:
        await engine.dispose()


async def query(db_url: str, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    engine = create_async_engine(db_url)
    try:
        async with engine.connect() as conn:
            return [tuple(r) for r in await conn.execute(text(sql), params)]
    finally:
        await engine.dispose()


async def wait_until(
    check: Callable[[], Awaitable[bool]], *, timeout: float, interval: float = 0.2, what: str = "condition"
) -> None:
    """Poll an async predicate until it holds; fail with `what` after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)
