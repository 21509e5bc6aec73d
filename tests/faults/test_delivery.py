"""Reply delivery through the real gateway process: transient send failures are retried and the reply is
delivered once; a blocked user is recorded, counted and not retried forever; a reply stored but not sent
when the process died is sent after the restart, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import GatewayProcess
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import (
    CHAT,
    TG_TOKEN,
    USER,
    assert_clean_logs,
    gateway_process,
    query,
    telegram_env,
    user_rows,
)

pytestmark = pytest.mark.slow
DELIVERIES = "SELECT part, state, attempts, error, platform_message_id FROM deliveries ORDER BY id"


async def test_send_failing_twice_then_succeeding_is_delivered_once(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        async with gateway_process(telegram_env(tmp_path, sqlite_url, llm, tg), tmp_path) as gw:
            tg.fail_next("sendMessage", kind="server_error", times=2)
            tg.push_message(CHAT, "hello there", user_id=USER)
            sent = await tg.wait_sent(1, timeout=30)
        assert [s.visible_text for s in sent] == ["echo: hello there"]
        assert len(tg.called("sendMessage")) == 3
        rows = await query(sqlite_url, DELIVERIES)
        assert [(r[0], r[1], r[2], r[4]) for r in rows] == [(0, "sent", 3, str(sent[0].message_id))]
        assert_clean_logs(gw)


async def test_blocked_user_is_recorded_and_not_retried_forever(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        async with gateway_process(telegram_env(tmp_path, sqlite_url, llm, tg), tmp_path) as gw:
            tg.fail_next("sendMessage", kind="forbidden", times=50)
            tg.fail_next("sendMessageDraft", kind="forbidden", times=50)
            tg.push_message(CHAT, "are you there?", user_id=USER)
            await gw.wait_log(rf"reply to telegram:{CHAT} not delivered.*lasting", timeout=20)
            rows = await query(sqlite_url, DELIVERIES)
            assert [(r[0], r[1], r[2]) for r in rows] == [(0, "failed", 1)]
            assert "blocked by the user" in rows[0][3]
            assert len(tg.called("sendMessage")) == 1  # a lasting failure is not retried

            tg._faults.clear()
            tg.push_message(CHAT, "/stats", user_id=USER)
            stats = await tg.wait_sent(1, timeout=20)
            assert "1 failed" in stats[0].visible_text
        assert len(tg.called("sendMessage")) == 2
        assert_clean_logs(gw)


async def test_reply_stored_but_not_sent_before_a_crash_is_sent_once_after_restart(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        env = telegram_env(tmp_path, sqlite_url, llm, tg)
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            tg.fail_next("sendMessage", kind="server_error", times=100)
            tg.push_message(CHAT, "remember me", user_id=USER)
            await gw.wait_log(r"reply to telegram:\d+ \(part 0\) failed", timeout=20)
        finally:
            await gw.kill()
        assert await user_rows(sqlite_url) == [("remember me", True, True)]
        tg._faults.clear()
        requests_before = len(llm.requests)
        async with gateway_process(env, tmp_path) as gw2:
            sent = await tg.wait_sent(1, timeout=20)
        assert [s.visible_text for s in sent] == ["echo: remember me"]
        assert len(llm.requests) == requests_before  # delivered from the record, not answered again
        rows = await query(sqlite_url, DELIVERIES)
        assert [(r[0], r[1]) for r in rows] == [(0, "sent")]
        assert "reply part(s) recorded before the restart were sent" in gw2.log_text()
        assert_clean_logs(gw2)
