"""Load: a burst into one chat and two hundred busy chats, through the real gateway process.

Both run `python -m gateway run` on Postgres against the Telegram and Anthropic fakes, so the real
adapter (python-telegram-bot), pipeline, per-chat locks and store are what is exercised. How fast it goes
is the benchmarks' question (`bench/bench_many_chats.py` runs the busy chats at 1,000).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.harness import running_gateway
from tests.fakes.telegram import FakeTelegram
from tests.faults.load_support import (
    LOAD_TOKEN,
    TimedAnthropic,
    load_env,
    overlapping,
    stored_messages,
    wait_until,
)
from tests.faults.many_chats import check_many_chats, run_many_chats

USER = 4242

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


async def test_burst_of_100_messages_into_one_chat(tmp_path: Path, pg_url: str) -> None:
    """All 100 stored once in platform order, one turn at a time, every message answered."""
    chat = 777
    async with TimedAnthropic(reply_delay=0.05) as llm, FakeTelegram(token=LOAD_TOKEN) as tg:
        async with running_gateway(load_env(pg_url, llm, tg, tmp_path), cwd=tmp_path) as gw:
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


async def test_two_hundred_chats_five_messages_each(tmp_path: Path, pg_url: str) -> None:
    """200 private chats x 5 messages delivered at once: all 1,000 stored once, in order, and answered.

    200 chats are several times the 30 connections a process pools (10 + 20 overflow) and put 200 chat
    locks on its one lock connection, and their 1,000 updates arrive in `getUpdates` answers of at most
    100: turns queue for connections and locks while later messages of the same chats are still being
    stored, which is the concurrency there is to get wrong. More chats only lengthen the queues (the
    benchmark runs 1,000).
    """
    run = await run_many_chats(pg_url, tmp_path, chats=200, per_chat=5, timeout=180)
    check_many_chats(run)
