"""Two gateway processes on one Postgres, many chats, tool-heavy turns, one bot-wide daily cap: what the
API billed for every call, at list prices, never passes the cap, however the workers interleave.

Every scripted reply asks for a tool, so each turn runs up to its iteration limit; Telegram webhooks are
spread over both workers, so both reserve against the same budget lines at the same time. The sum is
taken from the fake API's side (what it answered and billed), not from the bot's own ledger; the ledger
must agree with it.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from agent.models import cost_usd, lookup_model
from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import query
from tests.faults.load_support import stored_messages, wait_until
from tests.support.ports import free_port

TOKEN = "123456:SPEND-token-abcdefghijklmnopqrstuvwxyz"
SECRET = "webhook-secret-spend-0123456789"
MODEL = "claude-sonnet-4-6"
CAP = 0.25
CHATS, PER_CHAT = 10, 3

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


async def test_two_workers_never_take_the_bot_past_its_daily_cap(tmp_path: Path, pg_url: str) -> None:
    rng = random.Random(11)
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{p}/tg-hook" for p in ports]
    async with FakeAnthropic() as llm, FakeTelegram(token=TOKEN) as tg:
        for i in range(CHATS * PER_CHAT * 8):
            llm.script_reply(
                f"Looking at the clock ({i}).", tool_uses=[{"name": "current_time", "input": {}}]
            )
        workers = []
        for i, port in enumerate(ports):
            (tmp_path / f"w{i}").mkdir()
            env = base_env(
                database_url=pg_url,
                anthropic_url=llm.base_url,
                tmp=tmp_path / f"w{i}",
                MODEL=MODEL,
                TELEGRAM_BOT_TOKEN=TOKEN,
                TELEGRAM_BASE_URL=tg.base_url,
                TELEGRAM_WEBHOOK_URL=urls[i],
                TELEGRAM_WEBHOOK_LISTEN="127.0.0.1",
                TELEGRAM_WEBHOOK_PORT=str(port),
                TELEGRAM_WEBHOOK_SECRET=SECRET,
                GATEWAY_ALLOW_ALL_USERS="true",
                LIMITS__USER_MESSAGES_PER_MINUTE="10000",
                LIMITS__CHAT_DAILY_BUDGET_USD="0",
                LIMITS__BOT_DAILY_BUDGET_USD=str(CAP),
                AGENT__MAX_OUTPUT_TOKENS="512",
                FLEET__WORKER_NAME=f"w{i}",
            )
            workers.append(GatewayProcess(env, cwd=tmp_path / f"w{i}"))
        try:
            await asyncio.gather(*(w.start() for w in workers))
            for n in range(PER_CHAT):
                posts = []
                for c in range(1, CHATS + 1):
                    update = tg.push_message(c, f"c{c}m{n} what time is it, again and again?", user_id=c)
                    posts.append(tg.deliver_webhook(rng.choice(urls), update, SECRET))
                assert set(await asyncio.gather(*posts)) == {200}

            async def all_answered() -> bool:
                rows = [r for r in await stored_messages(pg_url) if r.role == "user"]
                return len(rows) >= CHATS * PER_CHAT and all(r.replied or not r.needs_reply for r in rows)

            await wait_until(all_answered, timeout=120, what="every message answered or refused")
        finally:
            await asyncio.gather(*(w.stop() for w in workers))

    billed = cost_usd(lookup_model(MODEL), llm.total_usage())
    assert billed <= CAP, f"the API billed ${billed:.4f} against a ${CAP:.2f} cap"
    assert billed > CAP * 0.4, f"only ${billed:.4f} of ${CAP:.2f} was used: the cap did not bind"
    (line,) = await query(
        pg_url,
        "SELECT spent_usd, reserved_usd FROM spend_ledger WHERE scope = 'bot' AND period LIKE '____-__-__'",
    )
    assert line.spent_usd == pytest.approx(billed, rel=1e-6)
    assert line.reserved_usd == pytest.approx(0.0, abs=1e-9)
    stopped = [s for s in tg.sent if "the bot's daily budget" in s.visible_text]
    assert stopped, "no reply said the bot's budget was spent"
    assert any(
        "It resets at 00:00 UTC" in s.visible_text or "resets at 00:00 UTC" in s.visible_text for s in stopped
    )
    for w in workers:
        assert "Traceback" not in w.log_text()
