"""Anthropic API faults: one failed call is retried and the user gets the answer; a fault that lasts gives a
human reply within a bounded time; a failing summarizer never blocks the turn and is recorded."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agent.llm import AnthropicClient
from gateway.app.gateway import Gateway
from gateway.store import Store
from tests.e2e.harness import GatewayProcess
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.anthropic.replies import FaultKind
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import CHAT, TG_TOKEN, USER, assert_clean_logs, query, telegram_env
from tests.support.gateway_bot import Bot, make_settings
from tests.support.memory_adapter import MemoryAdapter

TOTAL_BUDGET_S = 4.0


@asynccontextmanager
async def retrying_bot(
    fake: FakeAnthropic, db_url: str, tmp_path: Path, **overrides: Any
) -> AsyncIterator[Bot]:
    """A gateway whose client retries like production (2 retries) under a short per-call budget."""
    settings = make_settings(fake, db_url, spool_dir=tmp_path / "spool", **overrides)
    store = await Store.open(db_url)
    llm = AnthropicClient(
        api_key=fake.api_key,
        base_url=fake.base_url,
        max_retries=2,
        timeout_s=1.0,
        total_timeout_s=TOTAL_BUDGET_S,
    )
    adapter = MemoryAdapter()
    gateway = Gateway(settings, [adapter], store=store, llm=llm)
    adapter.settle = gateway.tasks.drain
    try:
        await gateway.start()
        yield Bot(gateway, adapter, store, fake)
    finally:
        await gateway.stop()
        await llm.close()
        await store.close()


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("rate_limit", {"retry_after": 0.5}),
        ("overloaded", {}),
        ("server_error", {}),
        ("reset", {}),
        ("timeout", {"delay": 2.0}),
    ],
)
async def test_one_failed_call_is_retried_and_answered(
    kind: str, options: dict[str, Any], tmp_path: Path, sqlite_url: str
) -> None:
    async with FakeAnthropic() as fake, retrying_bot(fake, sqlite_url, tmp_path) as bot:
        fake.script_fault(kind, times=1, scope="reply", **options)  # type: ignore[arg-type]
        replies = await bot.adapter.say("are you there?")
        assert [r.text for r in replies] == ["echo: are you there?"]
        assert len(bot.replies()) == 2  # the failed attempt and the retry


@pytest.mark.parametrize("kind", ["rate_limit", "overloaded", "server_error", "reset", "timeout"])
async def test_lasting_fault_gives_a_human_reply_in_bounded_time(
    kind: FaultKind, tmp_path: Path, sqlite_url: str
) -> None:
    async with FakeAnthropic() as fake, retrying_bot(fake, sqlite_url, tmp_path) as bot:
        retry_after = 0.5 if kind == "rate_limit" else None
        fake.script_fault(kind, times=-1, scope="reply", retry_after=retry_after, delay=30)
        started = time.monotonic()
        replies = await bot.adapter.say("are you there?")
        elapsed = time.monotonic() - started
        assert len(replies) == 1
        assert "Your message is saved" in replies[0].text
        assert "Traceback" not in replies[0].text
        assert elapsed < TOTAL_BUDGET_S + 3.0
        assert 1 < len(bot.replies()) <= 3  # retried, but never more than the retry limit
        rows = await bot.window()
        assert [(r.text, r.replied) for r in rows if r.role == "user"] == [("are you there?", True)]
        fake.clear_faults()
        # The next turn picks the unanswered question up together with the new one.
        assert [r.text for r in await bot.adapter.say("and now?")] == ["echo: are you there? and now?"]


async def test_failing_summarizer_during_hygiene_does_not_block_the_turn(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with (
        FakeAnthropic() as fake,
        retrying_bot(fake, sqlite_url, tmp_path, model_context_length=8000) as bot,
    ):
        fake.script_fault("server_error", times=-1, scope="summary")
        for n in range(3):
            replies = await bot.adapter.say(f"part {n}: " + "lorem ipsum " * 1000)
            assert len(replies) == 1
            assert replies[-1].text.endswith("…") or replies[-1].text.startswith(("echo:", "("))
        outcomes = await bot.rows("SELECT trigger, outcome FROM compactions")
        assert outcomes, "hygiene never ran"
        assert {outcome for _, outcome in outcomes} <= {"degraded", "aborted"}
        assert all(r.replied for r in await bot.window() if r.needs_reply)


async def test_lasting_overload_through_the_real_process(tmp_path: Path, sqlite_url: str) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        llm.script_fault("overloaded", times=-1, scope="reply")
        gw = GatewayProcess(telegram_env(tmp_path, sqlite_url, llm, tg), cwd=tmp_path)
        await gw.start()
        try:
            tg.push_message(CHAT, "hello?", user_id=USER)
            sent = await tg.wait_sent(1, timeout=30)
            assert "overloaded" in sent[0].visible_text
            llm.clear_faults()
            tg.push_message(CHAT, "hello again", user_id=USER)
            sent = await tg.wait_sent(2, timeout=30)
            assert sent[1].visible_text.startswith("echo:")
        finally:
            await gw.stop()
        assert (await query(sqlite_url, "SELECT count(*) FROM messages WHERE needs_reply AND NOT replied"))[
            0
        ][0] == 0
        assert_clean_logs(gw)
