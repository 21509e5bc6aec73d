"""Migration 0005 indexes the messages already stored (not summaries or tool results) on both backends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import JSON, column, insert, table

from agent.tools.recall_types import RecallQuery
from gateway.store import Store
from gateway.store.db import create_engine
from gateway.store.migrate import alembic_config, upgrade_async
from gateway.store.rows import chats, compactions, messages

NOW = datetime(2026, 2, 1, 8, 0, tzinfo=UTC)
_BEFORE_INDEX = str(ScriptDirectory.from_config(alembic_config()).get_revision("0005").down_revision)
"""The revision just before the one that creates the recall index."""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue("empty_sqlite_url" if request.param == "sqlite" else "empty_pg_url")
    return url


def _message(i: int, text: str, state: str, **extra: object) -> dict[str, object]:
    return {
        "id": i,
        "session_pk": 1,
        "chat_pk": 1,
        "seq": i * 1024,
        "role": "user",
        "content": text,
        "text": text,
        "author_id": "ann",
        "author_name": "Ann",
        "token_estimate": 5,
        "state": state,
        "pruned": False,
        "needs_reply": False,
        "replied": False,
        "created_at": NOW,
        "archived_by": None,
        **extra,
    }


async def test_existing_messages_are_indexed_by_the_migration(empty_url: str) -> None:
    await upgrade_async(empty_url, _BEFORE_INDEX)
    engine = create_engine(empty_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                insert(chats).values(
                    id=1, platform="telegram", chat_id="1", thread_id="", kind="private", created_at=NOW
                )
            )
            session = {
                "id": 1,
                "chat_pk": 1,
                "active": True,
                "created_at": NOW,
                "next_seq": 10_000,
                "active_message_count": 2,
                "active_tokens": 10,
                "tokens_since_call": 0,
                "compaction_count": 1,
                "engine_state": {},
                "cache_gaps": [],
            }
            # the sessions table as it was at that revision (it still had cache_gaps)
            json_columns = ("engine_state", "cache_gaps")
            old_sessions = table(
                "sessions", *(column(name, JSON if name in json_columns else None) for name in session)
            )
            await conn.execute(insert(old_sessions).values(**session))
            compaction = {
                "id": 1,
                "session_pk": 1,
                "chat_pk": 1,
                "trigger": "manual",
                "outcome": "ok",
                "reason": "",
                "tokens_before": 1,
                "tokens_after": 1,
                "messages_before": 1,
                "messages_after": 1,
                "summary_message_id": 4,
                "duration_ms": 1,
                "created_at": NOW,
                "undone": False,
                "archived_count": 2,
                "prev_engine_state": {},
                "prev_active_tokens": 0,
                "pruned_ids": [],
            }
            await conn.execute(insert(compactions).values(**compaction))
            await conn.execute(
                insert(messages),
                [
                    _message(1, "the boiler was serviced in January", "archived", archived_by=1),
                    _message(2, "boiler output from a tool", "archived", archived_by=1, author_id="tool"),
                    _message(3, "我们的锅炉坏了", "archived", archived_by=1),
                    _message(4, "Summary: the boiler was serviced", "summary"),
                    _message(5, "a recent message about the boiler", "active"),
                ],
            )
    finally:
        await engine.dispose()
    await upgrade_async(empty_url)
    store = await Store.open(empty_url)
    try:
        found = await store.search_history(1, RecallQuery(text="boiler", limit=10), shown_whole_below=1)
        assert sorted(h.main.message_id for h in found.hits) == [1, 5]
        chinese = await store.search_history(1, RecallQuery(text="锅炉"), shown_whole_below=1)
        assert [h.main.message_id for h in chinese.hits] == [3]
    finally:
        await store.close()
