"""Many private Telegram chats, several messages each, all pushed at once into the real gateway process
(python-telegram-bot against the fake Bot API, the fake model, Postgres): the run, and the checks on what
it left behind.

`tests/faults/test_load.py` runs it at the size that exercises the concurrency; `bench/bench_many_chats.py`
runs it at 1,000 chats and reports the rate.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.harness import running_gateway
from tests.fakes.telegram import FakeTelegram
from tests.faults.load_support import (
    LOAD_TOKEN,
    Row,
    Span,
    TimedAnthropic,
    load_env,
    query,
    stored_messages,
    wait_until,
)


@dataclass(frozen=True, slots=True)
class ManyChatsRun:
    chats: int
    per_chat: int
    seconds: float
    """From the first message pushed to every message stored and marked answered."""
    users: list[Row]
    """The stored user messages, ordered by chat and seq."""
    answered: set[int]
    """The chats the bot sent a message to."""
    spans: list[Span]
    """The reply requests the model received."""
    log: str

    @property
    def messages(self) -> int:
        return self.chats * self.per_chat


async def run_many_chats(
    pg_url: str, tmp: Path, *, chats: int, per_chat: int, timeout: float
) -> ManyChatsRun:
    """Push message n of every chat before message n+1 of any (chat c's are `c<c>m<n>`), then wait until
    all are stored and answered and every chat has its reply."""
    async with TimedAnthropic() as llm, FakeTelegram(token=LOAD_TOKEN) as tg:
        async with running_gateway(load_env(pg_url, llm, tg, tmp), cwd=tmp) as gw:
            started = time.monotonic()
            for n in range(per_chat):
                for c in range(1, chats + 1):
                    tg.push_message(c, f"c{c}m{n}", user_id=c)

            async def all_answered() -> bool:
                [(stored, replied)] = await query(
                    pg_url,
                    "SELECT count(*), count(*) FILTER (WHERE replied) FROM messages WHERE role = 'user'",
                )
                return bool(stored == replied == chats * per_chat)

            await wait_until(
                all_answered, timeout=timeout, interval=0.5, what=f"{chats * per_chat} answered messages"
            )
            seconds = time.monotonic() - started
            # A turn marks its messages answered just before it sends the reply.
            await tg.wait_for(lambda: {s.chat_id for s in tg.sent} >= set(range(1, chats + 1)), timeout=30)
            answered = {s.chat_id for s in tg.sent}
        users = [r for r in await stored_messages(pg_url) if r.role == "user"]
        return ManyChatsRun(chats, per_chat, seconds, users, answered, llm.reply_spans(), gw.log_text())


def check_many_chats(run: ManyChatsRun) -> None:
    """Every message stored once and in its chat's order, every chat answered, no model request mixing
    two chats' messages, no traceback in the gateway's log."""
    assert len(run.users) == run.messages
    assert len({(r.chat_id, r.platform_message_id) for r in run.users}) == run.messages
    texts: defaultdict[str, list[str]] = defaultdict(list)
    for row in run.users:
        texts[row.chat_id].append(row.text)
    for c in range(1, run.chats + 1):
        expected = [f"c{c}m{n}" for n in range(run.per_chat)]
        assert texts[str(c)] == expected, f"chat {c} lost or reordered messages"
    assert run.answered == set(range(1, run.chats + 1)), "every chat got a reply"
    for span in run.spans:
        assert len(span.chats()) == 1, "a request mixed two chats' messages"
    assert "Traceback" not in run.log
