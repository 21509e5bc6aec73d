"""When the keep-alive job looks at a session: migration 0010 makes every session that holds a cache state
due at once (the job's first look then sets its time), and a session without one is never read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import JSON, column, insert, null, table

from gateway.store import Store
from gateway.store.db import create_engine
from gateway.store.migrate import upgrade_async
from gateway.store.rows import chats

NOW = datetime(2026, 2, 1, 8, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue("empty_sqlite_url" if request.param == "sqlite" else "empty_pg_url")
    return url


def _session(pk: int, cache_state: object) -> dict[str, object]:
    return {
        "id": pk,
        "chat_pk": pk,
        "active": True,
        "created_at": NOW,
        "next_seq": 1024,
        "active_message_count": 0,
        "active_tokens": 0,
        "tokens_since_call": 0,
        "compaction_count": 0,
        "engine_state": {},
        "cache_state": cache_state,
        "last_activity_at": NOW,
    }


async def test_sessions_with_a_cache_state_are_due_after_the_upgrade(empty_url: str) -> None:
    await upgrade_async(empty_url, "0009")
    engine = create_engine(empty_url)
    try:
        async with engine.begin() as conn:
            for pk in (1, 2):
                await conn.execute(
                    insert(chats).values(
                        id=pk,
                        platform="telegram",
                        chat_id=str(pk),
                        thread_id="",
                        kind="private",
                        created_at=NOW,
                    )
                )
            cached = {"prefixes": [[7, "5m", NOW.timestamp()]], "turns": [[NOW.timestamp(), -1.0, 0.0, 1.0]]}
            # the sessions table as it was at that revision
            old = _session(1, cached)
            old_sessions = table(
                "sessions", *(column(n, JSON if n in ("engine_state", "cache_state") else None) for n in old)
            )
            await conn.execute(insert(old_sessions).values(**old))
            await conn.execute(insert(old_sessions).values(**_session(2, null())))  # SQL NULL: none kept
    finally:
        await engine.dispose()

    await upgrade_async(empty_url)
    later = datetime.now(UTC) + timedelta(minutes=1)  # the upgrade made it due at its own time
    store = await Store.open(empty_url, clock=lambda: later)
    try:
        due = await store.cache_looks_due(store.now())
        assert [(s.id, kind) for s, kind in due] == [(1, "private")]
        # a look that finds nothing to keep (the entry expired long ago) leaves nothing due
        await store.set_cache_look(1, None)
        assert await store.cache_looks_due(store.now()) == []
        assert await store.earliest_cache_look() is None
    finally:
        await store.close()
