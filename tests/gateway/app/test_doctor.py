"""`gateway doctor` and the `db` commands, driven like a user would, against real SQLite/Postgres and
the fake Anthropic API on 127.0.0.1."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from gateway.__main__ import main
from gateway.app.doctor import (
    check_anthropic,
    check_database,
    check_jobs,
    check_telegram_webhook,
    check_transcription,
    check_web_tools,
    doctor,
)
from gateway.config import SchedulerSettings, Settings, TranscriptionSettings
from gateway.platforms.telegram.registration import secret_hash
from gateway.store import Store
from gateway.store.jobs.runs import JobRunLog
from gateway.store.migrate import head_revision
from gateway.store.webhooks.registrations import WebhookRecords
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram
from tests.fakes.transcription import FakeTranscription

SECRET = "sk-ant-doctor-secret"


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(api_key=SECRET) as fake:
        yield fake


def settings_for(
    url: str, api: FakeAnthropic, *, key: str = SECRET, model: str = "claude-sonnet-4-6"
) -> Settings:
    return Settings(
        database_url=url,
        anthropic_api_key=key,
        anthropic_base_url=api.base_url,
        model=model,
        telegram_bot_token="123:tg-secret",
    )


async def test_healthy_setup_passes_and_prints_no_secrets(db_url: str, fake_api: FakeAnthropic) -> None:
    out = io.StringIO()
    code = await asyncio.to_thread(doctor, settings_for(db_url, fake_api), out=out)
    report = out.getvalue()
    assert code == 0, report
    assert SECRET not in report
    assert "tg-secret" not in report
    assert "ANTHROPIC_API_KEY" in report
    assert "[  ok] database" in report
    assert f"head {head_revision()}" in report
    assert "[  ok] anthropic" in report
    assert "telegram will start" in report


async def test_rejected_key_and_unknown_model_fail(sqlite_url: str, fake_api: FakeAnthropic) -> None:
    wrong_key = await check_anthropic(settings_for(sqlite_url, fake_api, key="sk-wrong"))
    assert not wrong_key.ok
    assert "rejected the API key" in wrong_key.detail
    unknown = await check_anthropic(settings_for(sqlite_url, fake_api, model="claude-nonexistent-9"))
    assert not unknown.ok
    assert "does not know model" in unknown.detail


async def test_unreachable_endpoint_fails_quickly(sqlite_url: str) -> None:
    settings = Settings(
        database_url=sqlite_url, anthropic_api_key="k", anthropic_base_url="http://127.0.0.1:9"
    )
    check = await check_anthropic(settings, request_timeout=2.0)
    assert not check.ok
    assert "unreachable" in check.detail


async def test_unmigrated_database_points_to_db_upgrade(
    empty_sqlite_url: str, fake_api: FakeAnthropic
) -> None:
    check = await check_database(settings_for(empty_sqlite_url, fake_api))
    assert not check.ok
    assert "gateway db upgrade" in check.detail

    out = io.StringIO()
    code = await asyncio.to_thread(doctor, settings_for(empty_sqlite_url, fake_api), out=out)
    assert code == 1
    assert "broken: database" in out.getvalue()


def test_db_commands_round_trip(
    empty_sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", empty_sqlite_url)
    assert main(["db", "current"]) == 0
    assert "schema revision: none" in capsys.readouterr().out
    assert main(["db", "upgrade"]) == 0
    assert f"schema revision: {head_revision()}" in capsys.readouterr().out
    assert main(["db", "downgrade", "base"]) == 0
    assert "schema revision: none" in capsys.readouterr().out


def test_config_error_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PROMPT_CACHING__CACHE_TTL", "10m")
    assert main(["doctor"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "prompt_caching.cache_ttl" in err


def test_database_failure_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:9/none")
    assert main(["db", "upgrade"]) == 1
    assert "database unavailable" in capsys.readouterr().err


async def test_transcription_is_reported_and_its_endpoint_checked(
    sqlite_url: str, fake_api: FakeAnthropic
) -> None:
    async with FakeTranscription(api_key="stt-doctor-secret") as stt:
        base = settings_for(sqlite_url, fake_api)
        heard = {"provider": "openai", "base_url": stt.url, "model": "whisper-1"}
        good = base.model_copy(
            update={"transcription": TranscriptionSettings(**heard, api_key="stt-doctor-secret")}
        )
        out = io.StringIO()
        code = await asyncio.to_thread(doctor, good, out=out)
        report = out.getvalue()
        assert code == 0, report
        assert "stt-doctor-secret" not in report
        assert "TRANSCRIPTION" in report
        assert "[  ok] transcription:" in report
        [probe] = stt.answered
        assert probe.filename == "doctor.wav"
        assert probe.audio.startswith(b"RIFF")

        wrong = base.model_copy(update={"transcription": TranscriptionSettings(**heard, api_key="nope")})
        check = await check_transcription(wrong)
        assert not check.ok
        assert "refused the bot's API key" in check.detail

    off = await check_transcription(settings_for(sqlite_url, fake_api))
    assert off.ok
    assert not off.required


@pytest.mark.postgres
async def test_fleet_line_names_the_poller_and_each_shard_owner(pg_url: str) -> None:
    from gateway.app.doctor import check_fleet
    from gateway.store.locks.leases import PostgresLeases

    settings = Settings(database_url=pg_url, discord={"shard_count": 2})
    worker = PostgresLeases(pg_url, worker="hostA:41")
    try:
        await worker.try_take("telegram:polling")
        await worker.try_take("discord:shard:2:1")
        check = await check_fleet(settings)
    finally:
        await worker.close()
    assert check.detail == (
        "1 worker(s) running; telegram polling: hostA:41; discord shards: 0=nobody, 1=hostA:41"
    )


async def test_jobs_are_listed_with_their_last_and_next_run_and_overdue_ones_warn(
    sqlite_url: str, fake_api: FakeAnthropic
) -> None:
    settings = settings_for(sqlite_url, fake_api)
    store = await Store.open(sqlite_url)
    try:
        runs = JobRunLog(store, worker="host:41")
        await runs.record("usage-rollup", every=timedelta(hours=1), result="ok")
        await runs.record(
            "idle-compaction", every=timedelta(minutes=5), result="error", error="StoreError: gone"
        )
        recorded = datetime.now(UTC)
    finally:
        await store.close()
    checks = {c.name: c for c in await check_jobs(settings, now=recorded + timedelta(minutes=20))}
    assert set(checks) == {
        "job idle-compaction",
        "job usage-rollup",
        "job cache-keepalive",
        "job spend-sweep",
        "job reminders",
    }
    rollup = checks["job usage-rollup"]
    assert rollup.ok
    assert rollup.line().startswith("[  ok] job usage-rollup: every 1 h; last run 20 min ago (ok, host:41)")
    assert "next due in 40 min" in rollup.detail
    idle = checks["job idle-compaction"]
    assert not idle.ok
    assert not idle.required
    assert idle.line().startswith("[warn] job idle-compaction: OVERDUE: no successful run for 3 intervals")
    assert "last error: StoreError: gone" in idle.detail
    assert "no run recorded yet" in checks["job cache-keepalive"].detail
    assert checks["job reminders"].detail.startswith("every 1 s; no run recorded yet")

    off = await check_jobs(settings.model_copy(update={"scheduler": SchedulerSettings(enabled=False)}))
    assert [c.line() for c in off] == ["[  ok] jobs: off (SCHEDULER__ENABLED=false): no background job runs"]


async def test_doctor_reports_a_stale_webhook_secret_and_telegram_delivery_errors(sqlite_url: str) -> None:
    token, url = "123:tg-secret", "https://bot.example/hook"
    async with FakeTelegram(token=token) as tg:
        settings = Settings(
            database_url=sqlite_url, telegram_bot_token=token, telegram_base_url=tg.base_url,
            telegram_webhook_url=url, telegram_webhook_secret="new-secret",
        )  # fmt: skip
        tg.webhook = {"url": url, "secret_token": "old-secret", "max_connections": 40}
        tg.webhook_error = (int(time.time()) - 300, "Wrong response from the webhook: 403 Forbidden")
        records = WebhookRecords(sqlite_url)
        try:
            await records.record(
                "telegram", "123", url=url, secret_hash=secret_hash(token, "old-secret"),
                allowed_updates=["message"], max_connections=40, worker="web-1:7",
            )  # fmt: skip
            stale = await check_telegram_webhook(settings)
            await records.record(
                "telegram", "123", url=url, secret_hash=secret_hash(token, "new-secret"),
                allowed_updates=["message"], max_connections=40, worker="web-1:8",
            )  # fmt: skip
            tg.webhook_error = None
            healthy = await check_telegram_webhook(settings)
        finally:
            await records.close()
    assert stale is not None
    assert not stale.ok
    assert not stale.required
    assert "the registered secret is not TELEGRAM_WEBHOOK_SECRET" in stale.detail
    assert "restart one worker" in stale.detail
    assert "'Wrong response from the webhook: 403 Forbidden' (5 min ago" in stale.detail
    assert "old-secret" not in stale.detail
    assert healthy is not None
    assert healthy.ok, healthy
    assert "registered by web-1:8" in healthy.detail
    assert await check_telegram_webhook(settings_without_webhook(sqlite_url)) is None


def settings_without_webhook(url: str) -> Settings:
    return Settings(database_url=url, telegram_bot_token="123:tg-secret")


async def test_embeddings_are_checked_with_the_query_prefix(sqlite_url: str, fake_api: FakeAnthropic) -> None:
    from gateway.app.doctor import check_embeddings
    from gateway.config import EmbeddingsSettings
    from tests.fakes.embeddings import FakeEmbeddings

    base = settings_for(sqlite_url, fake_api)
    off = await check_embeddings(base)
    assert off.ok
    assert "keywords only" in off.detail
    async with FakeEmbeddings() as fake:
        config = EmbeddingsSettings(
            provider="openai", base_url=fake.url, api_key=fake.api_key, model="e5", query_prefix="query: "
        )
        check = await check_embeddings(base.model_copy(update={"embeddings": config}))
        assert check.ok, check.detail
        assert "256-dimension vector" in check.detail
        assert "prefixes: query 'query: '" in check.detail
        assert "stored messages waiting to be embedded" in check.detail
        assert fake.requests[-1].body["input"] == ["query: what did we decide about the trip?"]
        fake.fail(503)
        broken = await check_embeddings(base.model_copy(update={"embeddings": config}))
        assert not broken.ok
        assert not broken.required
        assert "503" in broken.detail


def test_the_web_tools_line_names_versions_limits_and_domain_rules(sqlite_url: str) -> None:
    base = {"database_url": sqlite_url, "model": "claude-sonnet-5-5"}
    only = {"web_search": {"allowed_domains": ["a.org"]}}
    on = check_web_tools(Settings(_env_file=None, **base, tools=only))
    assert on.ok
    assert on.line().endswith(
        "web tools: web_search_20260318 (up to 5 per request; only a.org), "
        "web_fetch_20260318 (up to 5 per request; pages cut at 20,000 tokens)"
    )
    off = {"web_search": {"enabled": False}, "web_fetch": {"enabled": False}}
    assert "off:" in check_web_tools(Settings(_env_file=None, **base, tools=off)).line()
    pinned = {"web_search": {"version": "web_search_20260318"}}
    haiku_settings = Settings(_env_file=None, database_url=sqlite_url, model="claude-haiku-4-5", tools=pinned)
    haiku = check_web_tools(haiku_settings)
    assert not haiku.ok
    assert "web_search_20260318 is newer than claude-haiku-4-5 takes (web_search_20250305)" in haiku.line()
