"""Start-up and shutdown of the real `python -m gateway run` process against the fakes.

A rate-limited Discord command sync does not delay answers; SIGTERM is honoured within 10 s while the
Discord gateway hangs before READY and while a turn waits for the model; configuration errors a
platform reports (a missing privileged intent, a rejected token) end the process with one line that
says what to fix, a non-zero status and no traceback.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.discord import FakeDiscord
from tests.fakes.discord.gateway import DISALLOWED_INTENTS
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import CHAT, USER, eventually, telegram_env, user_rows

pytestmark = pytest.mark.slow

DC_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAy.lifecycle.discord-bot-token"
DC_USER, DM = 7102, 9301
SIGTERM_LIMIT_S = 10.0


def discord_env(tmp_path: Path, db_url: str, llm: FakeAnthropic, dc: FakeDiscord) -> dict[str, str]:
    return base_env(
        database_url=db_url,
        anthropic_url=llm.base_url,
        tmp=tmp_path,
        DISCORD_BOT_TOKEN=DC_TOKEN,
        DISCORD_API_BASE_URL=dc.api_base,
        DISCORD_GATEWAY_URL=dc.gateway_url,
        DISCORD_ALLOWED_USERS=str(DC_USER),
    )


async def exit_code(gw: GatewayProcess, timeout: float) -> int:
    assert gw.proc is not None
    code = await asyncio.wait_for(gw.proc.wait(), timeout)
    return await gw.stop() if code is None else code


def assert_no_traceback(gw: GatewayProcess) -> None:
    logs = gw.log_text()
    assert "Traceback" not in logs, logs
    assert "Task exception was never retrieved" not in logs, logs


async def test_rate_limited_command_sync_does_not_delay_the_first_answer(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with FakeAnthropic() as llm, FakeDiscord(token=DC_TOKEN, echo_sent=False) as dc:
        # Discord answers the sync with a 429 asking to wait a minute (several deployments restarting).
        dc.fail_next("PUT /applications/{app}/commands", status=429, retry_after=60.0)
        gw = GatewayProcess(discord_env(tmp_path, sqlite_url, llm, dc), cwd=tmp_path)
        await gw.start(timeout=30)
        try:
            asked = time.monotonic()
            dc.push_message(DM, "are you there?", author_id=DC_USER, username="ann")
            [answer] = await dc.wait_sent(1, timeout=10)
            assert time.monotonic() - asked < 5.0
            assert answer.content.startswith("echo: are you there?")
            assert dc.faults_served, "the sync did meet the 429"
            assert not dc.commands, "the sync still waits out its 429, in the background"
        finally:
            stopping = time.monotonic()
            code = await gw.stop()  # while the sync waits: SIGTERM is still honoured at once
            took = time.monotonic() - stopping
        assert code == 0
        assert took < SIGTERM_LIMIT_S, f"SIGTERM honoured after {took:.1f}s"
        assert_no_traceback(gw)


async def test_sigterm_while_discord_hangs_before_ready(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeDiscord(token=DC_TOKEN) as dc:
        dc.gateway.withhold_ready = True
        gw = GatewayProcess(discord_env(tmp_path, sqlite_url, llm, dc), cwd=tmp_path)
        await gw.start(ready=None)
        try:
            await eventually(lambda: bool(dc.identifies), timeout=30)
            await asyncio.sleep(0.5)
            assert gw.proc is not None
            gw.proc.send_signal(signal.SIGTERM)
            sent = time.monotonic()
            code = await exit_code(gw, SIGTERM_LIMIT_S + 2)
            took = time.monotonic() - sent
        finally:
            await gw.kill()
        assert took < SIGTERM_LIMIT_S, f"SIGTERM honoured after {took:.1f}s"
        assert code == 0
        assert "SIGTERM received" in gw.log_text()
        assert_no_traceback(gw)


async def test_missing_message_content_intent_is_one_line(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeDiscord(token=DC_TOKEN) as dc:
        dc.gateway.close_on_identify = DISALLOWED_INTENTS
        gw = GatewayProcess(discord_env(tmp_path, sqlite_url, llm, dc), cwd=tmp_path)
        await gw.start(ready=None)
        try:
            code = await exit_code(gw, 30)
        finally:
            await gw.kill()
        assert code == 2
        assert gw.logs[-1] == (
            "gateway: discord: the bot may not read message content; enable Message Content Intent "
            "under Bot -> Privileged Gateway Intents in the Discord developer portal"
        ), gw.log_text()
        assert_no_traceback(gw)


async def test_rejected_telegram_token_is_one_line(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token="123456:the-real-token") as tg:
        env = telegram_env(tmp_path, sqlite_url, llm, tg)  # a token the fake does not accept
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start(ready=None)
        try:
            code = await exit_code(gw, 30)
        finally:
            await gw.kill()
        assert code == 2
        assert gw.logs[-1] == "gateway: telegram: the bot token was rejected (check TELEGRAM_BOT_TOKEN)"
        assert_no_traceback(gw)


async def test_sigterm_mid_turn_stops_in_time_and_the_turn_is_answered_after_restart(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with (
        FakeAnthropic() as llm,
        FakeTelegram(token="123456:TEST-token-faults-abcdefghijklmnopqrstuvwxyz") as tg,
    ):
        env = telegram_env(tmp_path, sqlite_url, llm, tg)
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            llm.reply_delay = 60.0
            tg.push_message(CHAT, "a question the model is slow to answer", user_id=USER)
            await eventually(lambda: any(r.kind == "reply" for r in llm.requests), timeout=20)
            sent = time.monotonic()
            code = await gw.stop(timeout=SIGTERM_LIMIT_S + 2)
            took = time.monotonic() - sent
        finally:
            await gw.kill()
        assert took < SIGTERM_LIMIT_S, f"SIGTERM honoured after {took:.1f}s"
        assert code == 0
        assert "answered after the restart" in gw.log_text()
        assert await user_rows(sqlite_url) == [("a question the model is slow to answer", True, False)]
        assert_no_traceback(gw)
        llm.reply_delay = 0.0
        again = GatewayProcess(env, cwd=tmp_path)
        await again.start()
        try:
            sent_msgs = await tg.wait_sent(1, timeout=20)
            assert sent_msgs[0].visible_text.startswith("echo: a question the model is slow to answer")
        finally:
            await again.stop()
        assert len(tg.sent) == 1
        assert await user_rows(sqlite_url) == [("a question the model is slow to answer", True, True)]
