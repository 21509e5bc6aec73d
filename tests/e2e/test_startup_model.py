"""The configured model checked at start-up, through the real process: a model the API does not know stops
`run` and `chat` with one line naming it; an API that cannot be reached does not stop `run`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import CHAT, TG_TOKEN, USER, assert_clean_logs, telegram_env
from tests.support.ports import free_port

pytestmark = pytest.mark.slow

TYPO = "claude-sonet-4-6"


async def exit_status(gw: GatewayProcess, timeout: float = 30.0) -> int:
    assert gw.proc is not None
    code = await asyncio.wait_for(gw.proc.wait(), timeout)
    await gw.stop()  # collects the last lines
    return code


@pytest.mark.parametrize("command", ["run", "chat"])
async def test_an_unknown_model_stops_the_start_with_one_line_naming_it(
    command: str, tmp_path: Path, sqlite_url: str
) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        env = telegram_env(
            tmp_path, sqlite_url, llm, tg, MODEL=TYPO, CONSOLE__LOG_FILE=str(tmp_path / "chat.log")
        )
        gw = GatewayProcess(env, cwd=tmp_path, args=(command,))
        await gw.start(ready=None)
        code = await exit_status(gw)
    assert code == 2, gw.log_text()
    named = [line for line in gw.logs if TYPO in line]
    assert named == [
        f"gateway: model: the Anthropic API does not know model {TYPO!r} (404 not_found_error); check its "
        "spelling, or use a current model such as claude-sonnet-5-5"
    ], gw.log_text()
    assert "Traceback" not in gw.log_text()
    assert not llm.requests  # no message was sent to a model that does not exist
    assert not tg.sent


async def test_an_unknown_summary_model_stops_the_start_with_one_line_naming_its_setting(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with FakeAnthropic() as llm, FakeTelegram(token=TG_TOKEN) as tg:
        env = telegram_env(tmp_path, sqlite_url, llm, tg, AUXILIARY__COMPRESSION__MODEL=TYPO)
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start(ready=None)
        code = await exit_status(gw)
    assert code == 2, gw.log_text()
    assert [line for line in gw.logs if TYPO in line] == [
        f"gateway: auxiliary.compression.model: the Anthropic API does not know model {TYPO!r} "
        "(404 not_found_error); check its spelling, or use a current model such as claude-haiku-5-5"
    ], gw.log_text()
    assert not tg.sent


async def test_an_unreachable_api_at_start_up_does_not_stop_run(tmp_path: Path, sqlite_url: str) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    async with FakeTelegram(token=TG_TOKEN) as tg:
        env = base_env(
            database_url=sqlite_url,
            anthropic_url=closed,
            tmp=tmp_path,
            TELEGRAM_BOT_TOKEN=TG_TOKEN,
            TELEGRAM_BASE_URL=tg.base_url,
            TELEGRAM_ALLOWED_USERS=str(USER),
        )
        gw = GatewayProcess(env, cwd=tmp_path)
        await gw.start()
        try:
            await gw.wait_log("could not check model claude-sonnet-4-6 at start-up, starting anyway")
            tg.push_message(CHAT, "hello?", user_id=USER)
            sent = await tg.wait_sent(1, timeout=30)
            assert "unreachable" in sent[0].visible_text
            assert "Your message is saved" in sent[0].visible_text
        finally:
            await gw.stop()
    assert_clean_logs(gw)
