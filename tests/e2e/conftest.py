"""Shared end-to-end fixtures: a Telegram "world" (fake Bot API + fake Anthropic API + the real gateway
process on a fresh database) and small readers over what the bot sent and what the model was asked.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic, RecordedRequest
from tests.fakes.telegram import FakeTelegram, Sent

TELEGRAM_TOKEN = "123456:TEST-token-abcdefghijklmnopqrstuvwxyz"
BOT_USERNAME = "gateway_test_bot"


@dataclass
class TelegramWorld:
    """The fakes, the running gateway and its environment (restart with `restart`)."""

    llm: FakeAnthropic
    tg: FakeTelegram
    gw: GatewayProcess
    env: dict[str, str]
    cwd: Path
    earlier_logs: list[str] = field(default_factory=list)
    """Log lines of processes stopped by `restart`."""

    def sent_to(self, chat_id: int, thread_id: int | None = None) -> list[Sent]:
        return [
            s
            for s in self.tg.sent
            if s.chat_id == chat_id and (thread_id is None or s.message_thread_id == thread_id)
        ]

    async def wait_replies(
        self, chat_id: int, n: int, *, thread_id: int | None = None, timeout: float = 20.0
    ) -> list[Sent]:
        """The first `n` messages the bot sent to the chat (fails if fewer arrive in time)."""
        try:
            await self.tg.wait_for(lambda: len(self.sent_to(chat_id, thread_id)) >= n, timeout)
        except TimeoutError:
            got = [s.visible_text[:200] for s in self.sent_to(chat_id, thread_id)]
            logs = "\n".join([*self.earlier_logs, self.gw.log_text()])
            raise AssertionError(f"expected {n} messages in chat {chat_id}, got {got}\n{logs}") from None
        return self.sent_to(chat_id, thread_id)[:n]

    def replies(self) -> list[RecordedRequest]:
        """Answered reply (not summary) requests the gateway made, oldest first."""
        return [r for r in self.llm.requests if r.kind == "reply" and r.status == 200]

    async def restart(self) -> None:
        """Graceful stop, then a new process with the same environment and database."""
        code = await self.gw.stop()
        assert code == 0, f"gateway exited with {code}:\n{self.gw.log_text()}"
        self.earlier_logs.extend([*self.gw.logs, "---- restart ----"])
        self.gw = GatewayProcess(self.env, cwd=self.cwd)
        await self.gw.start()


def body_text(record: RecordedRequest) -> str:
    """Everything in a recorded request body, as one searchable string (unicode unescaped)."""
    return json.dumps(record.body, ensure_ascii=False)


def tool_results(record: RecordedRequest) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for message in record.body["messages"]:
        content = message["content"]
        if isinstance(content, list):
            blocks.extend(b for b in content if b.get("type") == "tool_result")
    return blocks


WorldFactory = Callable[..., AbstractAsyncContextManager[TelegramWorld]]


@pytest.fixture
def telegram_world(tmp_path: Path, db_url: str) -> WorldFactory:
    """`async with telegram_world(context_window=None, **env) as world:` on the test's database;
    `min_cacheable` lowers the fake API's minimum cacheable prompt (tokens) for the model (`model`, the
    reply model, claude-sonnet-4-6 unless given)."""

    @contextlib.asynccontextmanager
    async def start(
        *,
        context_window: int | None = None,
        reply_delay: float = 0.0,
        min_cacheable: int | None = None,
        model: str = "claude-sonnet-4-6",
        **extra: str,
    ) -> AsyncIterator[TelegramWorld]:
        windows = {model: context_window} if context_window else None
        floors = {model: min_cacheable} if min_cacheable else None
        async with (
            FakeAnthropic(context_windows=windows, reply_delay=reply_delay, min_cacheable=floors) as llm,
            FakeTelegram(token=TELEGRAM_TOKEN, username=BOT_USERNAME) as tg,
        ):
            env = base_env(
                database_url=db_url,
                anthropic_url=llm.base_url,
                tmp=tmp_path,
                TELEGRAM_BOT_TOKEN=TELEGRAM_TOKEN,
                TELEGRAM_BASE_URL=tg.base_url,
                TELEGRAM_BASE_FILE_URL=tg.base_file_url,
                **{"MODEL": model, **extra},
            )
            if context_window:
                env["MODEL_CONTEXT_LENGTH"] = str(context_window)
            world = TelegramWorld(llm=llm, tg=tg, gw=GatewayProcess(env, cwd=tmp_path), env=env, cwd=tmp_path)
            await world.gw.start()
            try:
                yield world
            finally:
                await world.gw.stop()
            world.gw.assert_no_secret(TELEGRAM_TOKEN, "test-key")

    return start
