"""Prometheus metrics and health over HTTP: a real gateway process is scraped after a turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.usage import Usage
from gateway.errors import DatabaseUnavailableError
from gateway.metrics import Metrics, MetricsServer
from tests.e2e.harness import base_env, running_gateway
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram
from tests.support.ports import free_port

TOKEN = "123456:TEST-token-abcdefghijklmnopqrstuvwxyz"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_cache_hit_ratio_is_read_over_all_prompt_tokens() -> None:
    metrics = Metrics()
    metrics.observe_usage(Usage(input_tokens=100, cache_creation_input_tokens=900), purpose="reply")
    metrics.observe_usage(
        Usage(input_tokens=100, cache_read_input_tokens=900, output_tokens=5), purpose="reply"
    )
    values = samples(metrics.exposition().decode())
    assert values[("gateway_cache_hit_ratio", ())] == 0.45
    assert values[("gateway_llm_tokens_total", (("kind", "cache_read"),))] == 900
    assert values[("gateway_llm_tokens_total", (("kind", "output"),))] == 5


def test_web_lookups_are_counted_by_kind() -> None:
    metrics = Metrics()
    assert samples(metrics.exposition().decode())[("gateway_web_lookups_total", (("kind", "search"),))] == 0
    both = Usage(input_tokens=10, web_search_requests=2, web_fetch_requests=1)
    metrics.observe_usage(both, purpose="reply")
    metrics.observe_usage(Usage(input_tokens=10, web_search_requests=1), purpose="reply")
    values = samples(metrics.exposition().decode())
    assert values[("gateway_web_lookups_total", (("kind", "search"),))] == 3
    assert values[("gateway_web_lookups_total", (("kind", "fetch"),))] == 1


async def test_healthz_reflects_the_database_ping() -> None:
    healthy = True

    async def ping() -> None:
        if not healthy:
            raise DatabaseUnavailableError("database unavailable during ping")

    server = MetricsServer(Metrics(), ping, host="127.0.0.1", port=0)
    await server.start()
    try:
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{server.port}/healthz"
            async with http.get(url) as resp:
                assert resp.status == 200
                assert await resp.json() == {"status": "ok"}
            healthy = False
            async with http.get(url) as resp:
                assert resp.status == 503
                assert (await resp.json())["status"] == "unavailable"
    finally:
        await server.stop()


async def test_metrics_move_after_a_turn(tmp_path: Path, sqlite_url: str) -> None:
    port = free_port()
    async with FakeAnthropic() as llm, FakeTelegram(token=TOKEN) as tg:
        env = base_env(
            database_url=sqlite_url,
            anthropic_url=llm.base_url,
            tmp=tmp_path,
            TELEGRAM_BOT_TOKEN=TOKEN,
            TELEGRAM_BASE_URL=tg.base_url,
            TELEGRAM_ALLOWED_USERS="42",
            OBSERVABILITY__METRICS_PORT=str(port),
            SCHEDULER__ENABLED="true",
        )
        async with running_gateway(env, cwd=tmp_path) as gw, aiohttp.ClientSession() as http:
            base = f"http://127.0.0.1:{port}"
            async with http.get(f"{base}/metrics") as resp:
                before = samples(await resp.text())
            async with http.get(f"{base}/healthz") as resp:
                assert resp.status == 200
            tg.push_message(1042, "hello metrics", user_id=42)
            await tg.wait_sent(1, timeout=20)
            for _ in range(50):  # the turn's timing is recorded just after its reply is sent
                async with http.get(f"{base}/metrics") as resp:
                    assert resp.status == 200
                    after = samples(await resp.text())
                if after.get(("gateway_turn_seconds_count", ()), 0.0) > 0:
                    break
                await asyncio.sleep(0.1)
        log = gw.log_text()
        assert "scheduler started: 4 job(s)" in log
        for job in ("cache-keepalive", "idle-compaction", "usage-rollup", "spend-sweep"):
            assert f"job {job}: every" in log
        assert "PAUSED" not in log

    def moved(name: str, labels: tuple[tuple[str, str], ...] = ()) -> float:
        return after.get((name, labels), 0.0) - before.get((name, labels), 0.0)

    assert moved("gateway_messages_stored_total", (("role", "user"),)) == 1
    assert moved("gateway_messages_stored_total", (("role", "assistant"),)) == 1
    assert moved("gateway_llm_calls_total", (("purpose", "reply"),)) == 1
    assert moved("gateway_llm_tokens_total", (("kind", "output"),)) > 0
    assert moved("gateway_turn_seconds_count") == 1
    assert moved("gateway_overhead_seconds_count") == 1
    assert after[("gateway_spool_depth", ())] == 0
    assert 0.0 <= after[("gateway_cache_hit_ratio", ())] <= 1.0


async def test_cache_waste_is_counted_when_a_write_goes_unread(sqlite_url: str) -> None:
    """Two replies 7 minutes apart in a chat cached for 5 minutes: the first write was never read."""
    from datetime import UTC, datetime, timedelta

    from tests.support.gateway_bot import running_bot
    from tests.support.memory_adapter import ADMIN

    start = datetime(2026, 11, 16, 9, 0, tzinfo=UTC)
    now = [start]
    async with (
        FakeAnthropic(clock=lambda: 0.0) as fake,
        running_bot(fake, sqlite_url, prompt_caching={"cache_ttl": "5m"}) as bot,
    ):
        bot.gateway.clock = lambda: now[0]
        await bot.adapter.say("context: " + "word " * 2_000, user=ADMIN)
        now[0] = start + timedelta(minutes=7)
        fake.set_time(420.0)
        await bot.adapter.say("and now?", user=ADMIN)
        values = samples(bot.gateway.metrics.exposition().decode())
    written = [r.usage["cache_creation_input_tokens"] for r in fake.requests if r.kind == "reply"]
    unread = values[("gateway_cache_waste_usd_total", (("kind", "unread_write"),))]
    assert unread == pytest.approx(written[0] * 3.0 * 1.25 / 1_000_000)
    assert values[("gateway_cache_waste_usd_total", (("kind", "expired_resend"),))] > 0
