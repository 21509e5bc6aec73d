"""Load: a burst into one chat and a thousand busy chats, through the real gateway process.

Both run `python -m gateway run` on Postgres against the Telegram and Anthropic fakes, so the real
adapter (python-telegram-bot), pipeline, per-chat locks and store are what is measured.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.harness import base_env, running_gateway
from tests.fakes.telegram_server import FakeTelegram
from tests.faults.load_support import TimedAnthropic, overlapping, stored_messages, wait_until

TOKEN = "123456:LOAD-token-abcdefghijklmnopqrstuvwxyz"
USER = 4242

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def _env(pg_url: str, llm: TimedAnthropic, tg: FakeTelegram, tmp: Path, **extra: str) -> dict[str, str]:
    return base_env(
        database_url=pg_url,
        anthropic_url=llm.base_url,
        tmp=tmp,
        TELEGRAM_BOT_TOKEN=TOKEN,
        TELEGRAM_BASE_URL=tg.base_url,
        GATEWAY_ALLOW_ALL_USERS="true",
        LIMITS__USER_MESSAGES_PER_MINUTE="100000",
        LIMITS__CHAT_DAILY_BUDGET_USD="0",
        **extra,
    )


async def test_burst_of_100_messages_into_one_chat(tmp_path: Path, pg_url: str) -> None:
    """All 100 stored once in platform order, one turn at a time, every message answered."""
    chat = 777
    async with TimedAnthropic(reply_delay=0.05) as llm, FakeTelegram(token=TOKEN) as tg:
        async with running_gateway(_env(pg_url, llm, tg, tmp_path), cwd=tmp_path) as gw:
            for n in range(100):
                tg.push_message(chat, f"c{chat}m{n} question {n}", user_id=USER)

            async def all_answered() -> bool:
                rows = [r for r in await stored_messages(pg_url) if r.role == "user"]
                return len(rows) == 100 and all(r.replied for r in rows)

            await wait_until(all_answered, timeout=90, what="100 stored and answered messages")
            await tg.wait_for(lambda: len(tg.sent) >= len(llm.reply_spans()), timeout=10)
        rows = await stored_messages(pg_url)
        users = [r for r in rows if r.role == "user"]
        ids = [int(r.platform_message_id or 0) for r in users]
        assert sorted(ids) == list(range(1, 101)), "every message stored exactly once"
        assert ids == sorted(ids), "stored order (seq) is the platform's order"
        assert all(r.needs_reply and r.replied for r in users)
        spans = llm.reply_spans()
        assert spans, "the model was asked"
        assert overlapping(spans) == [], "two turns of one chat ran at the same time"
        # Each turn ends with exactly one reply in the chat; turns batch what arrived meanwhile.
        replies = [s for s in tg.sent if s.chat_id == chat]
        assert len(replies) == len(spans)
        # The last turn was asked about the newest message (the echo itself is cut at 400 characters
        # when a turn batches many messages, so look at what the model was sent).
        assert "c777m99" in json.dumps(spans[-1].record.body["messages"][-1]), (
            "the last turn answers the newest"
        )
        assert [r for r in rows if r.role == "assistant"][-1].seq > users[-1].seq
        assert "Traceback" not in gw.log_text()


async def test_thousand_chats_five_messages_each(tmp_path: Path, pg_url: str) -> None:
    """1,000 private chats x 5 messages delivered at once: all 5,000 stored once and answered."""
    chats, per_chat = 1000, 5
    async with TimedAnthropic() as llm, FakeTelegram(token=TOKEN) as tg:
        async with running_gateway(_env(pg_url, llm, tg, tmp_path), cwd=tmp_path) as gw:
            started = time.monotonic()
            for n in range(per_chat):
                for c in range(1, chats + 1):
                    tg.push_message(c, f"c{c}m{n}", user_id=c)

            async def all_answered() -> bool:
                rows = [r for r in await stored_messages(pg_url) if r.role == "user"]
                return len(rows) == chats * per_chat and all(r.replied for r in rows)

            await wait_until(all_answered, timeout=420, interval=2.0, what="5,000 answered messages")
            elapsed = time.monotonic() - started
            answered = {s.chat_id for s in tg.sent}
            await tg.wait_for(lambda: {s.chat_id for s in tg.sent} >= set(range(1, chats + 1)), timeout=30)
            answered = {s.chat_id for s in tg.sent}
        rows = await stored_messages(pg_url)
        users = [r for r in rows if r.role == "user"]
        assert len(users) == chats * per_chat
        assert len({(r.chat_id, r.platform_message_id) for r in users}) == chats * per_chat
        for c in range(1, chats + 1):
            mine = [r.text for r in users if r.chat_id == str(c)]
            assert mine == [f"c{c}m{n}" for n in range(per_chat)], f"chat {c} lost or reordered messages"
        assert answered == set(range(1, chats + 1)), "every chat got a reply"
        for span in llm.reply_spans():
            assert len(span.chats()) == 1, "a request mixed two chats' messages"
        assert "Traceback" not in gw.log_text()
        print(f"1,000 chats x 5 messages answered in {elapsed:.1f}s")
