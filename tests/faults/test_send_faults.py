"""Platform send faults through the real gateway process: flood control and rejected markup are retried or
re-sent as plain text; a reply that cannot be delivered is logged with its chat, never an unhandled error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.discord import FakeDiscord
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import CHAT, TG_TOKEN, USER, assert_clean_logs, telegram_env

pytestmark = pytest.mark.slow
DC_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAy.faults.discord-bot-token"
DC_USER, DM = 7002, 9201


async def test_telegram_flood_control_bad_markup_and_blocked_user(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        gw = GatewayProcess(telegram_env(tmp_path, sqlite_url, llm, tg), cwd=tmp_path)
        await gw.start()
        try:
            tg.fail_next("sendMessage", kind="retry_after", retry_after=1)
            tg.push_message(CHAT, "first", user_id=USER)
            sent = await tg.wait_sent(1, timeout=20)
            assert sent[0].visible_text == "echo: first"

            llm.script_reply("**bold** and <b>tags</b>")
            tg.fail_next("sendMessage", kind="parse_error")
            tg.push_message(CHAT, "second", user_id=USER)
            sent = await tg.wait_sent(2, timeout=20)
            assert sent[1].parse_mode is None  # re-sent as plain text
            assert "bold" in sent[1].visible_text

            tg.fail_next("sendMessage", kind="forbidden")
            tg.push_message(CHAT, "third", user_id=USER)
            await gw.wait_log(rf"not delivered.*telegram:{CHAT}|telegram:{CHAT}.*not delivered", timeout=20)

            tg.push_message(CHAT, "fourth", user_id=USER)
            sent = await tg.wait_sent(3, timeout=20)
            assert sent[2].visible_text.startswith("echo:")
        finally:
            await gw.stop()
        assert len(tg.sent) == 3
        assert_clean_logs(gw)


async def test_discord_rate_limit_invalid_form_body_and_forbidden(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeDiscord(token=DC_TOKEN) as dc:
        env = base_env(
            database_url=sqlite_url,
            anthropic_url=llm.base_url,
            tmp=tmp_path,
            DISCORD_BOT_TOKEN=DC_TOKEN,
            DISCORD_API_BASE_URL=dc.api_base,
            DISCORD_GATEWAY_URL=dc.gateway_url,
            DISCORD_ALLOWED_USERS=str(DC_USER),
        )
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            dc.fail_next("POST /channels/{id}/messages", status=429, retry_after=0.3)
            dc.push_message(DM, "first", author_id=DC_USER, username="ann")
            sent = await dc.wait_sent(1, timeout=20)
            assert sent[0].content == "echo: first"

            dc.fail_next("POST /channels/{id}/messages", status=400, code=50035)
            dc.push_message(DM, "second", author_id=DC_USER, username="ann")
            sent = await dc.wait_sent(2, timeout=20)
            assert sent[1].content.startswith("echo:")

            dc.fail_next("POST /channels/{id}/messages", status=403, code=50007, times=5)
            dc.push_message(DM, "third", author_id=DC_USER, username="ann")
            await gw.wait_log(rf"not delivered.*discord:{DM}|discord:{DM}.*not delivered", timeout=20)
        finally:
            await gw.stop()
        gw.assert_no_secret(DC_TOKEN)
        logs = gw.log_text()
        assert "Task exception was never retrieved" not in logs
        assert "Traceback" not in logs, logs
