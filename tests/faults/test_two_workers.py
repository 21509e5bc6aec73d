"""Two gateway processes on one Postgres, both receiving Telegram webhooks for the same chats.

Updates are spread over both workers and a third of them are delivered to both (a load balancer
retrying, Telegram redelivering). The per-chat advisory lock and the unique platform message id must
keep one turn per chat at a time, store every message once and answer each once.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.telegram import FakeTelegram
from tests.faults.load_support import MARKER, TimedAnthropic, overlapping, stored_messages, wait_until
from tests.support.ports import free_port

TOKEN = "123456:WORKERS-token-abcdefghijklmnopqrstuvwxyz"
SECRET = "webhook-secret-0123456789"
CHATS, PER_CHAT = 12, 8

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


async def test_two_workers_share_chats_without_double_turns(tmp_path: Path, pg_url: str) -> None:
    rng = random.Random(5)
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{p}/tg-hook" for p in ports]
    async with TimedAnthropic(reply_delay=0.15) as llm, FakeTelegram(token=TOKEN) as tg:
        workers = []
        for i, (port, url) in enumerate(zip(ports, urls, strict=True)):
            (tmp_path / f"w{i}").mkdir()
            env = base_env(
                database_url=pg_url,
                anthropic_url=llm.base_url,
                tmp=tmp_path / f"w{i}",
                TELEGRAM_BOT_TOKEN=TOKEN,
                TELEGRAM_BASE_URL=tg.base_url,
                TELEGRAM_WEBHOOK_URL=url,
                TELEGRAM_WEBHOOK_LISTEN="127.0.0.1",
                TELEGRAM_WEBHOOK_PORT=str(port),
                TELEGRAM_WEBHOOK_SECRET=SECRET,
                GATEWAY_ALLOW_ALL_USERS="true",
                LIMITS__USER_MESSAGES_PER_MINUTE="10000",
            )
            workers.append(GatewayProcess(env, cwd=tmp_path / f"w{i}"))
        try:
            await asyncio.gather(*(w.start() for w in workers))
            # Wrong or missing secret: rejected by both workers, nothing stored.
            forged = tg.push_message(999, "c999m0 forged", user_id=999)
            assert await tg.deliver_webhook(urls[0], forged, "wrong-secret") == 403
            assert await tg.deliver_webhook(urls[1], forged) == 403

            doubled = 0
            for n in range(PER_CHAT):
                posts: list[Coroutine[Any, Any, int]] = []
                for c in range(1, CHATS + 1):
                    update = tg.push_message(c, f"c{c}m{n}", user_id=c)
                    targets = urls if rng.random() < 0.33 else [rng.choice(urls)]
                    doubled += len(targets) == 2
                    posts.extend(tg.deliver_webhook(u, update, SECRET) for u in targets)
                assert set(await asyncio.gather(*posts)) == {200}
                await asyncio.sleep(0.05)
            assert doubled > 10

            async def all_answered() -> bool:
                rows = [r for r in await stored_messages(pg_url) if r.role == "user"]
                return len(rows) >= CHATS * PER_CHAT and all(r.replied for r in rows)

            await wait_until(all_answered, timeout=60, what="every message stored and answered")
            await asyncio.sleep(0.5)  # a wrongly duplicated turn would show up now
        finally:
            await asyncio.gather(*(w.stop() for w in workers))

    rows = await stored_messages(pg_url)
    users = [r for r in rows if r.role == "user"]
    assert "999" not in {r.chat_id for r in rows}, "an update with a wrong secret was stored"
    assert len(users) == CHATS * PER_CHAT, "a message was stored twice or lost"
    for c in range(1, CHATS + 1):
        texts = sorted(r.text for r in users if r.chat_id == str(c))
        assert texts == sorted(f"c{c}m{n}" for n in range(PER_CHAT))

    by_chat: dict[int, list[object]] = {}
    for span in llm.reply_spans():
        chats = span.chats()
        assert len(chats) == 1, "one request mixed two chats"
        by_chat.setdefault(chats.pop(), []).append(span)
    for c, spans in by_chat.items():
        assert overlapping(spans) == [], f"chat {c} had two turns at once"  # type: ignore[arg-type]

    answered: dict[str, int] = {}
    for sent in tg.sent:
        for m in MARKER.finditer(sent.visible_text):
            answered[m.group(0)] = answered.get(m.group(0), 0) + 1
    expected = {f"c{c}m{n}" for c in range(1, CHATS + 1) for n in range(PER_CHAT)}
    assert set(answered) == expected, "a message was never answered"
    assert {k: v for k, v in answered.items() if v > 1} == {}, "a message was answered twice"
    both = [w.log_text() for w in workers]
    assert all(re.search(r"telegram: connected as @\w+ \(webhook", t) for t in both)
    assert all("Traceback" not in t for t in both)
    for w in workers:
        w.assert_no_secret(TOKEN, SECRET, "test-key")
