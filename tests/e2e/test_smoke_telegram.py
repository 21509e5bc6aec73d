"""The real gateway process answers a Telegram private chat through python-telegram-bot and the fakes."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.harness import base_env, running_gateway
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram

TOKEN = "123456:TEST-token-abcdefghijklmnopqrstuvwxyz"


async def test_private_chat_round_trip(tmp_path: Path, db_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TOKEN) as tg:
        env = base_env(
            database_url=db_url,
            anthropic_url=llm.base_url,
            tmp=tmp_path,
            TELEGRAM_BOT_TOKEN=TOKEN,
            TELEGRAM_BASE_URL=tg.base_url,
            TELEGRAM_ALLOWED_USERS="42",
        )
        async with running_gateway(env, cwd=tmp_path) as gw:
            tg.push_message(1042, "hello from telegram", user_id=42)
            sent = await tg.wait_sent(1, timeout=20)
            assert "echo: hello from telegram" in sent[0].visible_text
            assert sent[0].chat_id == 1042
            assert tg.reactions == [], "no acknowledgement reaction unless REPLY__ACK_REACTION is set"
        gw.assert_no_secret(TOKEN, "test-key")
        assert "telegram: enabled (long polling)" in gw.log_text()
