"""Streamed replies through the real gateway process, python-telegram-bot and discord.py against the fakes:
drafts then one message in private chats, one message edited as it grows in groups and on Discord,
flood control during streaming, replies longer than a message, and a crash in the middle of a stream."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic, Pacing
from tests.fakes.discord import FakeDiscord
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import CHAT, TG_TOKEN, USER, assert_clean_logs, eventually, query, telegram_env

pytestmark = pytest.mark.slow

GROUP = -100777
DC_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAz.stream.discord-bot-token"
DC_USER, DM = 7005, 9301
FAST = {"STREAMING__INTERVAL_S": "0.3", "STREAMING__GROUP_INTERVAL_S": "0.5"}
PACED = Pacing(first_token_s=0.2, tokens_per_s=250.0)


def long_reply(lines: int = 40) -> str:
    return "\n".join(f"Line {i}: the answer keeps going with more words to read." for i in range(lines))


@contextlib.asynccontextmanager
async def telegram(
    tmp_path: Path, db_url: str, **env: str
) -> AsyncIterator[tuple[FakeAnthropic, FakeTelegram, GatewayProcess]]:
    async with FakeAnthropic(pacing=PACED) as llm, FakeTelegram(token=TG_TOKEN) as tg:
        gw = GatewayProcess(telegram_env(tmp_path, db_url, llm, tg, **{**FAST, **env}), cwd=tmp_path)
        await gw.start()
        try:
            yield llm, tg, gw
        finally:
            await gw.stop()
        assert_clean_logs(gw)


def ask_in_group(tg: FakeTelegram, text: str) -> None:
    tg.push_message(
        GROUP, f"@gateway_test_bot {text}", user_id=USER, chat_type="supergroup", chat_title="team"
    )


async def test_private_chat_shows_growing_drafts_then_one_message(tmp_path: Path, sqlite_url: str) -> None:
    async with telegram(tmp_path, sqlite_url) as (llm, tg, _gw):
        reply = long_reply()
        llm.script_reply(reply)
        tg.push_message(CHAT, "tell me everything", user_id=USER)
        sent = await tg.wait_sent(1, timeout=20)
        drafts = [d.visible_text for d in tg.drafts if d.chat_id == CHAT]
        assert len(drafts) >= 2, drafts
        assert all(b.startswith(a) and len(b) > len(a) for a, b in itertools.pairwise(drafts))
        assert reply.startswith(drafts[0])
        assert len(drafts[0]) < len(reply)
        assert [s.visible_text for s in sent] == [reply]
        assert sent[0].parse_mode == "HTML"
        assert not sent[0].edited
        assert sent[0].at > max(d.at for d in tg.drafts)
    assert len(tg.sent) == 1


async def test_group_reply_is_one_message_edited_as_it_grows(tmp_path: Path, sqlite_url: str) -> None:
    async with telegram(tmp_path, sqlite_url) as (llm, tg, _gw):
        reply = long_reply()
        llm.script_reply(reply)
        ask_in_group(tg, "tell me everything")
        await tg.wait_for(lambda: any(s.visible_text == reply for s in tg.sent), timeout=20)
        assert tg.drafts == []
        posts = [s for s in tg.sent if not s.edited]
        edits = [s for s in tg.sent if s.edited]
        assert len(posts) == 1
        assert len(edits) >= 1
        assert {s.message_id for s in tg.sent} == {posts[0].message_id}
        shown = [s.visible_text for s in tg.sent]
        assert all(reply.startswith(text) for text in shown)
        assert shown[-1] == reply
        assert len(shown[0]) < len(reply)


async def test_retry_after_during_streaming_still_ends_with_the_complete_reply(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with telegram(tmp_path, sqlite_url) as (llm, tg, gw):
        reply = long_reply()
        llm.script_reply(reply)
        tg.fail_next("editMessageText", kind="retry_after", retry_after=1, times=2)
        ask_in_group(tg, "tell me everything")
        await tg.wait_for(lambda: bool(tg.sent) and tg.sent[-1].visible_text == reply, timeout=30)
        await gw.wait_log("flood control, next update")

        llm.script_reply(reply)
        tg.fail_next("sendMessageDraft", kind="retry_after", retry_after=5, times=1)
        tg.push_message(CHAT, "again please", user_id=USER)
        await tg.wait_for(lambda: any(s.chat_id == CHAT for s in tg.sent), timeout=30)
        assert [s.visible_text for s in tg.sent if s.chat_id == CHAT] == [reply]


async def test_reply_longer_than_the_limit_streams_into_two_messages(tmp_path: Path, sqlite_url: str) -> None:
    code = "\n".join(f"    value_{i} = compute({i})" for i in range(200))
    reply = "Here is the script:\n```python\n" + code + "\n```\nThat is all."
    async with telegram(tmp_path, sqlite_url) as (llm, tg, _gw):
        llm.script_reply(reply)
        ask_in_group(tg, "write the script")
        await tg.wait_for(
            lambda: len({s.message_id for s in tg.sent}) == 2 and "That is all." in tg.sent[-1].visible_text,
            timeout=30,
        )
        finals = {s.message_id: s for s in tg.sent}  # the last state of each message
        first, second = (finals[k] for k in sorted(finals))
        assert first.parse_mode == second.parse_mode == "HTML"
        assert "value_0 = compute(0)" in first.visible_text
        assert "value_199" in second.visible_text
        for part in (first, second):  # every message renders its code block on its own
            assert part.text.count("<pre>") == part.text.count("</pre>") == 1
        # the streamed preview can show the whole text before the turn records and sends its parts
        for _ in range(100):
            rows = await query(
                sqlite_url, "SELECT part, state, platform_message_id FROM deliveries ORDER BY part"
            )
            if len(rows) == 2 and all(r[1] == "sent" for r in rows):
                break
            await asyncio.sleep(0.1)
        assert [(r[0], r[1]) for r in rows] == [(0, "sent"), (1, "sent")]
        assert {int(r[2]) for r in rows} == set(finals)

        llm.script_reply(reply)
        tg.push_message(CHAT, "and in private?", user_id=USER)
        await tg.wait_for(lambda: len([s for s in tg.sent if s.chat_id == CHAT]) == 2, timeout=30)
        private = [s for s in tg.sent if s.chat_id == CHAT]
        assert not any(s.edited for s in private)
        assert "value_0" in private[0].visible_text
        assert "That is all." in private[1].visible_text


async def test_kill_during_a_stream_then_restart_delivers_one_complete_reply(
    tmp_path: Path, sqlite_url: str
) -> None:
    reply = long_reply(60)
    async with (
        FakeAnthropic(pacing=Pacing(first_token_s=0.1, tokens_per_s=40.0)) as llm,
        FakeTelegram(token=TG_TOKEN) as tg,
    ):
        env = telegram_env(tmp_path, sqlite_url, llm, tg, **FAST)
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            llm.script_reply(reply)
            tg.push_message(CHAT, "a long story please", user_id=USER)
            await eventually(lambda: len(tg.drafts) >= 2)
        finally:
            await gw.kill()
        assert tg.sent == []
        rows = await query(sqlite_url, "SELECT count(*) FROM messages WHERE role = 'assistant'")
        assert rows[0][0] == 0  # no half reply stored
        llm.pacing = Pacing()
        llm.script_reply(reply)
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            await tg.wait_sent(1, timeout=20)
        finally:
            await gw.stop()
        assert [s.visible_text for s in tg.sent] == [reply]
        assert_clean_logs(gw)


async def test_discord_streamed_reply_is_posted_then_edited(tmp_path: Path, sqlite_url: str) -> None:
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
            reply = long_reply(25)
            llm.script_reply(reply)
            dc.push_message(DM, "tell me everything", author_id=DC_USER, username="ann")
            await dc.wait_for(lambda: bool(dc.sent) and dc.sent[-1].content == reply, timeout=20)
        finally:
            await gw.stop()
        posts = [s for s in dc.sent if s.kind == "message"]
        edits = [s for s in dc.sent if s.kind == "edit"]
        assert len(posts) == 1
        assert len(edits) >= 1
        assert {s.message_id for s in dc.sent} == {posts[0].message_id}
        assert all(reply.startswith(s.content) for s in dc.sent)
        assert posts[0].message_reference is not None  # the first part answers the user's message
        assert "Traceback" not in gw.log_text()
