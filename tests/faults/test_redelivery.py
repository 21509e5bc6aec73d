"""Redelivered updates: Telegram re-sends an update after a restart, Discord replays events after a RESUME.
Each message is stored once and answered once."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import pytest

from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.discord import FakeDiscord
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import CHAT, TG_TOKEN, USER, assert_clean_logs, query, telegram_env

pytestmark = pytest.mark.slow
DC_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAy.redelivery.discord-bot-token"
DC_USER, DM = 7002, 9201


async def test_telegram_update_resent_after_a_restart(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        env = telegram_env(tmp_path, sqlite_url, llm, tg)
        update = tg.push_message(CHAT, "only once please", user_id=USER)
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            await tg.wait_sent(1, timeout=20)
        finally:
            await gw.stop()
        tg.push_update(copy.deepcopy(update))  # same update_id and message_id, as Telegram re-sends it
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            await gw.wait_log(r"duplicate delivery of \d+ in telegram:1042", timeout=20)
            await asyncio.sleep(1.0)
        finally:
            await gw.stop()
        assert len(tg.sent) == 1
        assert len([r for r in llm.requests if r.kind == "reply"]) == 1
        rows = await query(sqlite_url, "SELECT count(*) FROM messages WHERE text = 'only once please'")
        assert rows[0][0] == 1
        assert_clean_logs(gw)


async def test_discord_replay_after_resume(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeDiscord(token=DC_TOKEN, echo_sent=False) as dc:
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
            mid = dc.push_message(DM, "replayed message", author_id=DC_USER, username="ann")
            await dc.wait_sent(1, timeout=20)
            await dc.disconnect(code=4000, replay_last=1)  # the last dispatch is the user's message
            await gw.wait_log(rf"duplicate delivery of {mid} ", timeout=20)
            assert dc.resumes
            await asyncio.sleep(1.0)
        finally:
            await gw.stop()
        assert len(dc.sent) == 1
        assert len([r for r in llm.requests if r.kind == "reply"]) == 1
        rows = await query(
            sqlite_url, "SELECT count(*) FROM messages WHERE platform_message_id = :m", m=str(mid)
        )
        assert rows[0][0] == 1
