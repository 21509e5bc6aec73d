"""A Postgres outage while messages arrive: they are spooled on disk, written through on recovery, answered.

The outage is real for the gateway's database only: new connections are refused, existing ones are
terminated and the database is renamed away (so connecting fails with "database does not exist"), then
everything is restored. Other databases on the server, and other tests, are not disturbed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy.engine import make_url

from tests.e2e.harness import GatewayProcess
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import CHAT, TG_TOKEN, USER, assert_clean_logs, eventually, query, telegram_env

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
OTHER_CHAT = 1043


@contextlib.asynccontextmanager
async def outage(db_url: str) -> AsyncIterator[None]:
    """Make `db_url`'s database unreachable for the duration of the block; always restored."""
    url = make_url(db_url)
    name, away = url.database, f"{url.database}_away"
    admin = await asyncpg.connect(
        url.set(drivername="postgresql", database="postgres").render_as_string(False)
    )
    try:
        await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        for _ in range(50):
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name
            )
            try:
                await admin.execute(f'ALTER DATABASE "{name}" RENAME TO "{away}"')
                break
            except asyncpg.ObjectInUseError:
                await asyncio.sleep(0.1)
        yield
    finally:
        with contextlib.suppress(asyncpg.UndefinedObjectError, asyncpg.InvalidCatalogNameError):
            await admin.execute(f'ALTER DATABASE "{away}" RENAME TO "{name}"')
        await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
        await admin.close()


async def test_messages_during_an_outage_are_spooled_and_answered(tmp_path: Path, pg_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        env = telegram_env(tmp_path, pg_url, llm, tg, TELEGRAM_ALLOWED_USERS=f"{USER},43")
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            tg.push_message(CHAT, "before the outage", user_id=USER)
            await tg.wait_sent(1, timeout=20)
            async with outage(pg_url):
                tg.push_message(CHAT, "during the outage one", user_id=USER)
                tg.push_message(OTHER_CHAT, "during the outage two", user_id=43)
                tg.push_message(CHAT, "during the outage three", user_id=USER)
                await gw.wait_log(r"spooled message .* \(3 waiting\)", timeout=20)
                assert len(tg.sent) == 1
                assert (tmp_path / "spool" / "incoming.jsonl").read_text().count("\n") == 3
                await asyncio.sleep(3)  # the gateway keeps retrying meanwhile
            await gw.wait_log(r"spool: wrote through 3 message", timeout=20)
            await eventually(lambda: {s.chat_id for s in tg.sent[1:]} == {CHAT, OTHER_CHAT}, timeout=30)
            await asyncio.sleep(1.0)
        finally:
            await gw.stop()
        rows = await query(pg_url, "SELECT text, count(*) FROM messages WHERE role = 'user' GROUP BY text")
        assert dict(rows) == {
            "before the outage": 1,
            "during the outage one": 1,
            "during the outage two": 1,
            "during the outage three": 1,
        }
        pending = await query(pg_url, "SELECT count(*) FROM messages WHERE needs_reply AND NOT replied")
        assert pending[0][0] == 0
        texts = [s.visible_text for s in tg.sent if s.chat_id == CHAT]
        # Answered in platform order (possibly both in one turn): the last reply covers the last message.
        assert texts[-1].startswith("echo:")
        assert texts[-1].endswith("during the outage three")
        assert (tmp_path / "spool" / "incoming.jsonl").read_text() == ""
        assert_clean_logs(gw)
