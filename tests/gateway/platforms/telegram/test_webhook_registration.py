"""The webhook is registered again when what a worker would register differs from what the fleet
recorded or Telegram reports: a rotated secret (same URL), a new update type. The fake Bot API delivers
updates to the registered URL with the registered secret, as Telegram does, so a stale registration
shows as refused deliveries and nothing handed over."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from telegram import WebhookInfo

from gateway.metrics import Metrics
from gateway.platforms.base import IncomingMessage
from gateway.platforms.fleet import Fleet
from gateway.platforms.telegram import bot as telegram_bot
from gateway.platforms.telegram.bot import TelegramAdapter
from gateway.platforms.telegram.registration import (
    WantedWebhook,
    delivery_trouble,
    reasons_to_register,
    secret_hash,
)
from gateway.store.locks.leases import PostgresLeases
from gateway.store.webhooks.registrations import RegisteredWebhook, WebhookRecords
from tests.fakes.telegram import FakeTelegram
from tests.support.ports import free_port

TOKEN = "555003:webhook-registration-token"
BOT_ID = "555003"


@pytest.fixture(autouse=True)
def _ptb_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(token=TOKEN, deliver_webhooks=True, webhook_retry_s=0.05) as server:
        yield server


@pytest.fixture
async def records(db_url: str) -> AsyncIterator[WebhookRecords]:
    kept = WebhookRecords(db_url)
    try:
        yield kept
    finally:
        await kept.close()


class Inbox:
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, message: IncomingMessage) -> None:
        self.texts.append(message.text)


def _adapter(
    tg: FakeTelegram, port: int, records: WebhookRecords, *, secret: str, fleet: Fleet | None = None
) -> TelegramAdapter:
    return TelegramAdapter(
        token=TOKEN, base_url=tg.base_url, webhook_url=f"http://127.0.0.1:{port}/hook",
        webhook_listen="127.0.0.1", webhook_port=port, webhook_secret=secret, registrations=records,
        fleet=fleet,
    )  # fmt: skip


async def _handed_over(tg: FakeTelegram, inbox: Inbox, text: str) -> None:
    await tg.wait_for(lambda: text in inbox.texts, timeout=10)


async def test_a_rotated_secret_is_registered_again_and_the_next_message_arrives(
    tg: FakeTelegram, records: WebhookRecords, caplog: pytest.LogCaptureFixture
) -> None:
    port, inbox = free_port(), Inbox()
    first = _adapter(tg, port, records, secret="old-secret")
    await first.start(inbox, [])
    tg.push_message(7, "before the rotation", user_id=7)
    await _handed_over(tg, inbox, "before the rotation")
    await first.stop()
    tg.push_message(7, "while restarting", user_id=7)  # Telegram keeps it pending
    await tg.wait_for(lambda: tg.webhook_error is not None, timeout=10)

    caplog.set_level(logging.INFO, logger="gateway.platforms.telegram")
    second = _adapter(tg, port, records, secret="new-secret")
    await second.start(inbox, [])
    try:
        tg.push_message(7, "after the rotation", user_id=7)
        await _handed_over(tg, inbox, "after the rotation")
        await _handed_over(tg, inbox, "while restarting")
    finally:
        await second.stop()
    # (a call refused by flood control, within a second of the previous one, is made again)
    assert list(dict.fromkeys(c["secret_token"] for c in tg.called("setWebhook"))) == [
        "old-secret",
        "new-secret",
    ]
    assert "refusing requests" not in caplog.text, "the old secret, sent until re-registered, was reported"
    assert "the secret token changed" in caplog.text
    assert "Telegram reports a failed webhook delivery: 'Connection refused'" in caplog.text
    recorded = await records.registered("telegram", BOT_ID)
    assert recorded is not None
    assert recorded.secret_hash == secret_hash(TOKEN, "new-secret")
    assert "new-secret" not in repr(recorded), "the secret itself was stored"


async def test_a_restart_with_the_same_settings_leaves_the_webhook_alone(
    tg: FakeTelegram, records: WebhookRecords
) -> None:
    port, inbox = free_port(), Inbox()
    for text in ("first run", "second run"):
        adapter = _adapter(tg, port, records, secret="same-secret")
        await adapter.start(inbox, [])
        tg.push_message(8, text, user_id=8)
        await _handed_over(tg, inbox, text)
        await adapter.stop()
    assert len(tg.called("setWebhook")) == 1


async def test_an_added_update_type_is_registered_again(
    tg: FakeTelegram, records: WebhookRecords, monkeypatch: pytest.MonkeyPatch
) -> None:
    port, inbox = free_port(), Inbox()
    full = telegram_bot.ALLOWED_UPDATES
    monkeypatch.setattr(telegram_bot, "ALLOWED_UPDATES", ["message"])  # the version before the upgrade
    old = _adapter(tg, port, records, secret="s3cret")
    await old.start(inbox, [])
    sent = tg.push_message(9, "typo", user_id=9)
    tg.push_message(9, "fixed", user_id=9, edited=True, message_id=sent["message"]["message_id"])
    tg.push_message(9, "marker one", user_id=9)
    await _handed_over(tg, inbox, "marker one")
    assert "fixed" not in inbox.texts, "an update type the bot did not ask for arrived"
    await old.stop()

    monkeypatch.setattr(telegram_bot, "ALLOWED_UPDATES", full)
    new = _adapter(tg, port, records, secret="s3cret")
    await new.start(inbox, [])
    try:
        tg.push_message(9, "fixed again", user_id=9, edited=True, message_id=sent["message"]["message_id"])
        await _handed_over(tg, inbox, "fixed again")
    finally:
        await new.stop()
    registered = list(dict.fromkeys(c["allowed_updates"] for c in tg.called("setWebhook")))
    assert len(registered) == 2
    assert "edited_message" in registered[-1]
    assert tg.webhook["allowed_updates"] == telegram_bot.ALLOWED_UPDATES


@pytest.mark.postgres
async def test_two_workers_of_one_configuration_started_together_register_once(
    tg: FakeTelegram, pg_url: str
) -> None:
    port = free_port()
    ports = [port, free_port()]
    leases = [PostgresLeases(pg_url, worker=f"w{i}") for i in range(2)]
    stores = [WebhookRecords(pg_url), WebhookRecords(pg_url)]
    workers = [
        TelegramAdapter(
            token=TOKEN,
            base_url=tg.base_url,
            webhook_url=f"http://127.0.0.1:{port}/hook",
            webhook_listen="127.0.0.1",
            webhook_port=p,
            webhook_secret="shared-secret",
            registrations=stores[i],
            fleet=leases[i],
        )
        for i, p in enumerate(ports)
    ]
    inbox = Inbox()
    try:
        await asyncio.gather(*(w.start(inbox, []) for w in workers))
        tg.push_message(10, "to the balancer", user_id=10)
        await _handed_over(tg, inbox, "to the balancer")
    finally:
        await asyncio.gather(*(w.stop() for w in workers))
        await asyncio.gather(*(s.close() for s in stores), *(lease.close() for lease in leases))
    assert len(tg.called("setWebhook")) == 1
    assert len(tg.called("getWebhookInfo")) == 2


async def test_refused_deliveries_are_logged_once_per_run_and_counted(
    tg: FakeTelegram, records: WebhookRecords, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    adapter = _adapter(tg, port, records, secret="right-secret")
    metrics = Metrics()
    metrics.track_webhooks([adapter])
    await adapter.start(Inbox(), [])
    try:
        chat = {"id": 5, "type": "private"}
        update = {"update_id": 99_000, "message": {"message_id": 1, "date": 0, "chat": chat}}
        with caplog.at_level(logging.INFO, logger="gateway.platforms.telegram"):
            statuses = [await tg.deliver_webhook(url, update, "stale-secret") for _ in range(3)]
            await tg.deliver_webhook(url, update, "right-secret")
            statuses.append(await tg.deliver_webhook(url, update))
    finally:
        await adapter.stop()
    assert statuses == [403] * 4
    refusals = [r for r in caplog.records if "refusing requests" in r.getMessage()]
    assert len(refusals) == 2, "one line per run of refusals"
    assert "TELEGRAM_WEBHOOK_SECRET" in refusals[0].getMessage()
    assert adapter.refused_deliveries == 4
    assert 'gateway_webhook_refused_total{platform="telegram"} 4.0' in metrics.exposition().decode()


def _info(**fields: object) -> WebhookInfo:
    return WebhookInfo.de_json({"has_custom_certificate": False, "pending_update_count": 0, **fields}, None)


def _recorded(wanted: WantedWebhook, **changes: object) -> RegisteredWebhook:
    values: dict[str, object] = {
        "url": wanted.url, "secret_hash": wanted.secret_hash, "allowed_updates": wanted.allowed_updates,
        "max_connections": wanted.max_connections, "registered_at": datetime.now(UTC), "worker": "w0",
    }  # fmt: skip
    values.update(changes)
    return RegisteredWebhook(**values)  # type: ignore[arg-type]


def test_reasons_to_register() -> None:
    wanted = WantedWebhook.of(
        url="https://bot.example/hook",
        token=TOKEN,
        secret="s",
        allowed_updates=["message"],
        max_connections=40,
    )
    same = _recorded(wanted)
    at_url = _info(url=wanted.url, max_connections=40, allowed_updates=["message"])
    assert reasons_to_register(wanted, same, at_url) == []
    assert reasons_to_register(wanted, same, _info(url="")) == ["no webhook is set"]
    assert reasons_to_register(wanted, None, at_url) == ["no registration is recorded"]
    assert reasons_to_register(wanted, _recorded(wanted, secret_hash="x"), at_url) == [
        "the secret token changed"
    ]
    by_hand = _info(url=wanted.url, max_connections=40, allowed_updates=["message", "callback_query"])
    assert reasons_to_register(wanted, same, by_hand) == ["the update types changed"]
    assert reasons_to_register(wanted, same, _info(url=wanted.url, max_connections=10)) == [
        "max_connections changed"
    ]
    assert reasons_to_register(wanted, same, _info(url=wanted.url)) == [], "unreported fields are not changes"


def test_delivery_trouble_names_the_error_its_age_and_the_backlog() -> None:
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    failed = now - timedelta(minutes=5)
    info = _info(
        url="https://bot.example/hook",
        pending_update_count=3,
        last_error_date=int(failed.timestamp()),
        last_error_message="Wrong response from the webhook: 403 Forbidden",
    )
    assert delivery_trouble(info, now) == (
        "'Wrong response from the webhook: 403 Forbidden' (5 min ago; 3 update(s) pending)"
    )
    assert delivery_trouble(_info(url="https://bot.example/hook"), now) is None
