"""Crashes: `kill -9` mid-turn and mid-compaction; after a restart nothing is lost, mixed or repeated."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError

from tests.e2e.harness import GatewayProcess
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import (
    CHAT,
    TG_TOKEN,
    USER,
    assert_clean_logs,
    eventually,
    gateway_process,
    query,
    telegram_env,
    user_rows,
)
from tests.support.gateway_bot import ADMIN_ID, running_bot

pytestmark = pytest.mark.slow


def replies(llm: FakeAnthropic) -> list[Any]:
    return [r for r in llm.requests if r.kind == "reply"]


async def crash_during_reply(
    tmp_path: Path, db_url: str, llm: FakeAnthropic, tg: FakeTelegram, **env: str
) -> None:
    """One completed turn, then a second message whose LLM call is in flight when the gateway is killed."""
    gw = GatewayProcess(telegram_env(tmp_path, db_url, llm, tg, **env), cwd=tmp_path)
    await gw.start()
    try:
        tg.push_message(CHAT, "first question", user_id=USER)
        await tg.wait_sent(1, timeout=20)
        llm.reply_delay = 60.0
        tg.push_message(CHAT, "second question", user_id=USER)
        await eventually(lambda: len(replies(llm)) == 2)
    finally:
        await gw.kill()
    llm.reply_delay = 0.0
    assert await user_rows(db_url) == [("first question", True, True), ("second question", True, False)]


async def test_unanswered_turn_is_answered_once_after_a_crash(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        await crash_during_reply(tmp_path, sqlite_url, llm, tg)
        env = telegram_env(tmp_path, sqlite_url, llm, tg)
        async with gateway_process(env, tmp_path) as gw:
            sent = await tg.wait_sent(2, timeout=20)
            assert sent[1].visible_text.startswith("echo: second question")
            await asyncio.sleep(1.0)
        assert len(tg.sent) == 2, [s.visible_text for s in tg.sent]
        assert "recovering 1 unanswered message(s)" in gw.log_text()
        assert_clean_logs(gw)
        # A further restart answers nothing again: completed turns are never repeated.
        calls = len(replies(llm))
        async with gateway_process(env, tmp_path) as gw:
            await asyncio.sleep(1.5)
        assert len(tg.sent) == 2
        assert len(replies(llm)) == calls
        assert await user_rows(sqlite_url) == [
            ("first question", True, True),
            ("second question", True, True),
        ]


async def test_too_old_unanswered_turn_gets_an_apology(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        await crash_during_reply(tmp_path, sqlite_url, llm, tg)
        calls = len(replies(llm))
        env = telegram_env(tmp_path, sqlite_url, llm, tg, LIMITS__UNANSWERED_MAX_AGE_S="0")
        async with gateway_process(env, tmp_path) as gw:
            sent = await tg.wait_sent(2, timeout=20)
            await asyncio.sleep(1.0)
        assert "could not answer your earlier message" in sent[1].visible_text
        assert len(tg.sent) == 2
        assert len(replies(llm)) == calls
        assert (await user_rows(sqlite_url))[-1] == ("second question", True, True)
        assert_clean_logs(gw)


async def test_kill_during_compaction_leaves_the_session_as_before(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        env = telegram_env(
            tmp_path, sqlite_url, llm, tg, COMPRESSION__PROTECT_LAST_N="2", MODEL_CONTEXT_LENGTH="8000"
        )
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            for n in range(6):  # one turn each (a burst would be answered in fewer turns under load,
                # leaving a middle too small for a summary to be smaller than it)
                tg.push_message(CHAT, f"fact number {n}: " + "detail " * 120, user_id=USER)
                await eventually(lambda n=n: _all_answered(sqlite_url, n + 1))
            sent_before = len(tg.sent)
            before = await snapshot(sqlite_url)
            llm.summary_delay = 60.0
            tg.push_message(CHAT, "/compact", user_id=USER)
            await eventually(lambda: any(r.kind == "summary" for r in llm.requests), timeout=30)
        except TimeoutError:
            raise AssertionError([s.visible_text for s in tg.sent]) from None
        finally:
            await gw.kill()
        assert await snapshot(sqlite_url) == before
        llm.summary_delay = 0.0
        async with gateway_process(env, tmp_path) as gw:
            tg.push_message(CHAT, "/compact", user_id=USER)
            await eventually(lambda: any("compact" in s.visible_text.lower() for s in tg.sent[sent_before:]))
            try:
                await eventually(lambda: _compactions(sqlite_url))
            except TimeoutError:
                raise AssertionError([s.visible_text for s in tg.sent[sent_before:]]) from None
        after = await snapshot(sqlite_url)
        assert after != before
        assert after["compactions"] >= 1
        assert_clean_logs(gw)


async def _all_answered(db_url: str, n: int) -> bool:
    rows = await user_rows(db_url)
    return len(rows) == n and all(replied for _, _, replied in rows)


async def _compactions(db_url: str) -> bool:
    return bool((await query(db_url, "SELECT count(*) FROM compactions WHERE outcome <> 'aborted'"))[0][0])


async def snapshot(db_url: str) -> dict[str, Any]:
    """Everything a compaction may change: message states, the session's counters, compaction rows."""
    return {
        "messages": await query(db_url, "SELECT id, state, pruned, seq FROM messages ORDER BY id"),
        "sessions": await query(
            db_url,
            "SELECT id, active_message_count, active_tokens, compaction_count, rolling_summary FROM sessions",
        ),
        "compactions": (await query(db_url, "SELECT count(*) FROM compactions WHERE outcome <> 'aborted'"))[
            0
        ][0],
    }


async def test_failure_inside_the_compaction_transaction_changes_nothing(db_url: str) -> None:
    """A statement failing at the very end of apply_compaction rolls back everything before it."""
    async with (
        FakeAnthropic() as llm,
        running_bot(llm, db_url, compression={"protect_last_n": 2}, model_context_length=8000) as bot,
    ):
        from gateway.platforms.base import Author

        admin = Author(user_id=str(ADMIN_ID), display_name="Admin")
        for n in range(6):
            await bot.adapter.say(f"fact number {n}: " + "detail " * 120, user=admin)
        before = await snapshot(db_url)

        def fail_last_statement(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if statement.lstrip().upper().startswith("UPDATE COMPACTIONS"):
                raise IntegrityError(statement, None, Exception("injected failure"))

        engine = bot.store.engine.sync_engine
        event.listen(engine, "before_cursor_execute", fail_last_statement)
        try:
            failed = await bot.adapter.say("/compact", user=admin)
        finally:
            event.remove(engine, "before_cursor_execute", fail_last_statement)
        assert len(failed) == 1
        assert "failed" in failed[0].text.lower()
        assert await snapshot(db_url) == before
        done = await bot.adapter.say("/compact", user=admin)
        assert len(done) == 1
        after = await snapshot(db_url)
        assert after["compactions"] == 1
        assert [m for m in after["messages"] if m[1] != "active"], "the compaction archived nothing"
