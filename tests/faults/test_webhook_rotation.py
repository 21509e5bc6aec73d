"""An operator rotates the Telegram webhook secret (same URL) and restarts: the worker registers the
webhook again and the next message is answered. The fake Bot API delivers updates to the registered URL
with the registered secret, as Telegram does, so a registration left stale would be refused (403)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram
from tests.faults.conftest import TG_TOKEN, USER, assert_clean_logs, gateway_process, telegram_env
from tests.support.ports import free_port

pytestmark = [pytest.mark.slow]


async def test_a_restart_with_a_rotated_secret_answers_the_next_message(tmp_path: Path, db_url: str) -> None:
    port = free_port()
    hook = {
        "TELEGRAM_WEBHOOK_URL": f"http://127.0.0.1:{port}/tg-hook",
        "TELEGRAM_WEBHOOK_LISTEN": "127.0.0.1",
        "TELEGRAM_WEBHOOK_PORT": str(port),
    }
    async with (
        FakeAnthropic() as llm,
        FakeTelegram(token=TG_TOKEN, deliver_webhooks=True, webhook_retry_s=0.1) as tg,
    ):
        env = telegram_env(tmp_path, db_url, llm, tg, **hook, TELEGRAM_WEBHOOK_SECRET="old-secret-1")
        async with gateway_process(env, tmp_path) as gw:
            tg.push_message(USER, "before the rotation", user_id=USER)
            await tg.wait_sent(1, timeout=30)
        assert_clean_logs(gw)

        env["TELEGRAM_WEBHOOK_SECRET"] = "new-secret-2"
        async with gateway_process(env, tmp_path) as gw:
            tg.push_message(USER, "after the rotation", user_id=USER)
            await tg.wait_sent(2, timeout=30)
            await gw.wait_log(r"registering the webhook \(the secret token changed\)")
        assert_clean_logs(gw)
        gw.assert_no_secret("old-secret-1", "new-secret-2")
    assert tg.webhook["secret_token"] == "new-secret-2"
    assert "refusing requests" not in gw.log_text()
