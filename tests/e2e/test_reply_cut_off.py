"""A reply whose stream is cut in the middle, through the real gateway process against the fakes: what was
shown is finished with a note that it was cut off (a Telegram private chat's drafts then one message, a
group's and Discord's edited message, the console), the question stays answerable, and the log holds one
line, no traceback."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pexpect
import pytest

from tests.e2e.harness import GatewayProcess, base_env
from tests.e2e.test_console_terminal import COLS, ROWS, Chat
from tests.fakes.anthropic import FakeAnthropic, Pacing
from tests.fakes.anthropic.process import REPO_ROOT, spawn_fake_anthropic
from tests.fakes.discord import FakeDiscord
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import CHAT, TG_TOKEN, USER, assert_clean_logs, telegram_env

pytestmark = pytest.mark.slow

GROUP = -100778
DC_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDA0.cutoff.discord-bot-token"
DC_USER, DM = 7006, 9302
FAST = {"STREAMING__INTERVAL_S": "0.3", "STREAMING__GROUP_INTERVAL_S": "0.5"}
PACED = Pacing(first_token_s=0.2, tokens_per_s=150.0)
NOTE = "(Cut off: the connection to the assistant dropped"
REPLY = "\n".join(f"Line {i}: the answer keeps going with more words to read." for i in range(40))


def finished_with_the_note(text: str) -> str:
    """The part of `text` shown before the note; fails unless `text` is the reply's start plus the note."""
    head, found, note = text.partition("\n\n" + NOTE)
    assert found, text
    assert "retry" in note, note
    assert REPLY.startswith(head), head
    assert 0 < len(head) < len(REPLY), head
    return head


def assert_one_log_line(gw: GatewayProcess) -> None:
    lines = [line for line in gw.logs if "stream cut off" in line]
    assert len(lines) == 1, gw.log_text()
    assert_clean_logs(gw)


@contextlib.asynccontextmanager
async def telegram(
    tmp_path: Path, db_url: str
) -> AsyncIterator[tuple[FakeAnthropic, FakeTelegram, GatewayProcess]]:
    async with FakeAnthropic(pacing=PACED) as llm, FakeTelegram(token=TG_TOKEN) as tg:
        gw = GatewayProcess(telegram_env(tmp_path, db_url, llm, tg, **FAST), cwd=tmp_path)
        await gw.start()
        try:
            yield llm, tg, gw
        finally:
            await gw.stop()


async def test_telegram_private_chat_ends_the_cut_reply_with_the_note(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with telegram(tmp_path, sqlite_url) as (llm, tg, gw):
        llm.script_reply(REPLY)
        llm.script_fault("cut", scope="reply")
        tg.push_message(CHAT, "tell me everything", user_id=USER)
        sent = await tg.wait_sent(1, timeout=20)
        head = finished_with_the_note(sent[0].visible_text)
        drafts = [d.visible_text for d in tg.drafts if d.chat_id == CHAT]
        assert drafts, "nothing was streamed before the cut"
        assert all(head.startswith(d.rstrip()) for d in drafts)
        assert_one_log_line(gw)

        tg.push_message(CHAT, "retry", user_id=USER)
        sent = await tg.wait_sent(2, timeout=20)
        assert sent[1].visible_text == "echo: tell me everything retry"  # the question is answered now
    assert_clean_logs(gw)


async def test_telegram_group_message_is_edited_into_the_cut_reply_with_the_note(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with telegram(tmp_path, sqlite_url) as (llm, tg, gw):
        llm.script_reply(REPLY)
        llm.script_fault("cut", scope="reply")
        tg.push_message(
            GROUP,
            "@gateway_test_bot tell me everything",
            user_id=USER,
            chat_type="supergroup",
            chat_title="t",
        )
        await tg.wait_for(lambda: any(NOTE in s.visible_text for s in tg.sent), timeout=20)
        assert len({s.message_id for s in tg.sent}) == 1  # the streamed message, edited into its end
        assert any(s.edited for s in tg.sent)
        finished_with_the_note(tg.sent[-1].visible_text)
        assert_one_log_line(gw)


async def test_discord_message_is_edited_into_the_cut_reply_with_the_note(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with FakeAnthropic(pacing=PACED) as llm, FakeDiscord(token=DC_TOKEN) as dc:
        env = base_env(
            database_url=sqlite_url,
            anthropic_url=llm.base_url,
            tmp=tmp_path,
            DISCORD_BOT_TOKEN=DC_TOKEN,
            DISCORD_API_BASE_URL=dc.api_base,
            DISCORD_GATEWAY_URL=dc.gateway_url,
            DISCORD_ALLOWED_USERS=str(DC_USER),
            **FAST,
        )
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            llm.script_reply(REPLY)
            llm.script_fault("cut", scope="reply")
            dc.push_message(DM, "tell me everything", author_id=DC_USER, username="ann")
            await dc.wait_for(lambda: any(NOTE in s.content for s in dc.sent), timeout=20)
        finally:
            await gw.stop()
        assert dc.sent[0].kind == "message"
        assert any(s.kind == "edit" for s in dc.sent)
        assert len({s.message_id for s in dc.sent}) == 1
        finished_with_the_note(dc.sent[-1].content)
        assert_one_log_line(gw)


async def test_console_ends_the_cut_reply_with_the_note(tmp_path: Path) -> None:
    async with spawn_fake_anthropic() as llm:
        log = tmp_path / "chat.log"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "COLUMNS", "LINES"))},
            **base_env(
                database_url=f"sqlite+aiosqlite:///{tmp_path / 'console.db'}",
                anthropic_url=llm.base_url,
                tmp=tmp_path,
                CONSOLE__LOG_FILE=str(log),
                TERM="xterm",
            ),
        }
        child = pexpect.spawn(
            sys.executable, ["-m", "gateway", "chat"], cwd=str(REPO_ROOT), env=env, dimensions=(ROWS, COLS)
        )
        chat = Chat(child)
        try:
            await chat.shows("you>", timeout=30)
            await llm.script_reply(REPLY)
            await llm.set_pacing(first_token_s=0.2, tokens_per_s=150.0)
            await llm.script_fault("cut", scope="reply")
            chat.type("tell me everything\r")
            await chat.shows("Cut off:")
            await llm.set_pacing()
            screen = chat.text()
            assert "Line 0: the answer keeps going" in screen, screen
            assert "Line 39:" not in screen, screen
            assert screen.index("Line 0:") < screen.index("Cut off:"), screen
            chat.type("retry\r")
            await chat.shows("echo: tell me everything retry")
        finally:
            child.sendcontrol("d")
            child.expect(pexpect.EOF, timeout=15)
            child.close()
        logged = log.read_text()
        assert logged.count("stream cut off") == 1, logged
        assert "Traceback" not in logged, logged
    assert child.exitstatus == 0, (child.exitstatus, chat.text())
