"""Telegram updates are confirmed only once the gateway's handler returned (the message is stored).

Driven through python-telegram-bot against the fake Bot API, whose getUpdates returns an update again
until a later call passes an offset above its id, as Telegram does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.platforms import lanes
from gateway.platforms.base import IncomingMessage
from gateway.platforms.telegram.bot import TelegramAdapter
from gateway.platforms.telegram.polling import UpdateOffsets
from tests.fakes.telegram import FakeTelegram
from tests.support.ports import free_port

TOKEN = "555002:ack-test-token"


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(token=TOKEN) as fake:
        yield fake


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lanes, "RETRY_DELAYS_S", (0.05,))
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


def offsets_asked(tg: FakeTelegram) -> list[int]:
    return [int(p["offset"]) for p in tg.called("getUpdates") if p.get("offset") is not None]


def test_offsets_move_past_an_update_only_when_it_and_all_before_it_are_settled() -> None:
    offsets = UpdateOffsets()
    assert offsets.offset is None
    assert [offsets.admit(i) for i in (10, 11, 12)] == [True, True, True]
    assert offsets.offset == 10
    offsets.settle(11)
    offsets.settle(12)
    assert offsets.offset == 10, "11 and 12 are stored but 10 is not: nothing may be confirmed"
    assert not offsets.admit(11), "a settled update fetched again is not handed over twice"
    assert not offsets.admit(10), "an open update fetched again is not handed over twice"
    offsets.settle(10)
    assert offsets.offset == 13
    assert offsets.admit(20)
    assert (offsets.offset, offsets.open_count) == (20, 1)


async def test_an_update_is_confirmed_only_after_its_message_is_handed_over(tg: FakeTelegram) -> None:
    release = asyncio.Event()
    handled: list[str] = []

    async def handler(msg: IncomingMessage) -> None:
        if msg.text == "slow to store":
            await release.wait()
        handled.append(msg.text)

    adapter = TelegramAdapter(token=TOKEN, base_url=tg.base_url, poll_timeout=1)
    await adapter.start(handler, [])
    try:
        slow = tg.push_message(1, "slow to store", user_id=1)["update_id"]
        fast = tg.push_message(2, "quick", user_id=2)["update_id"]
        await tg.wait_for(lambda: handled == ["quick"])  # another chat is not held up
        polls = len(tg.called("getUpdates"))
        await tg.wait_for(lambda: len(tg.called("getUpdates")) >= polls + 2, timeout=5)
        assert max(offsets_asked(tg)) <= slow, "an update was confirmed before its message was stored"
        release.set()
        await tg.wait_for(lambda: any(o > fast for o in offsets_asked(tg)), timeout=5)
        assert handled == ["quick", "slow to store"], "each update is handed over once"
    finally:
        await adapter.stop()


async def test_a_failing_hand_over_is_retried_and_not_confirmed_meanwhile(
    tg: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lanes, "RETRY_DELAYS_S", (0.5,))
    attempts: list[float] = []
    second_failed = asyncio.Event()

    async def handler(msg: IncomingMessage) -> None:
        attempts.append(time.monotonic())
        if len(attempts) == 2:
            second_failed.set()
        if len(attempts) < 3:
            raise OSError("spool disk full")

    adapter = TelegramAdapter(token=TOKEN, base_url=tg.base_url, poll_timeout=1)
    await adapter.start(handler, [])
    try:
        update_id = tg.push_message(1, "keep me", user_id=1)["update_id"]
        await asyncio.wait_for(second_failed.wait(), 5)
        assert len(attempts) == 2
        assert all(o <= update_id for o in offsets_asked(tg))
        await tg.wait_for(lambda: any(o > update_id for o in offsets_asked(tg)), timeout=5)
        assert len(attempts) == 3
    finally:
        await adapter.stop()


async def test_an_update_cut_off_by_shutdown_is_delivered_again(tg: FakeTelegram) -> None:
    async def never_returns(msg: IncomingMessage) -> None:
        await asyncio.Event().wait()

    adapter = TelegramAdapter(token=TOKEN, base_url=tg.base_url, poll_timeout=1, drain_timeout=0.2)
    await adapter.start(never_returns, [])
    update_id = tg.push_message(1, "in flight at shutdown", user_id=1)["update_id"]
    await tg.wait_for(lambda: bool(tg.update_answers))
    started = time.monotonic()
    await adapter.stop()
    assert time.monotonic() - started < 3
    assert all(o <= update_id for o in offsets_asked(tg))

    received: list[IncomingMessage] = []

    async def keep(msg: IncomingMessage) -> None:
        received.append(msg)

    again = TelegramAdapter(token=TOKEN, base_url=tg.base_url, poll_timeout=1)
    await again.start(keep, [])
    try:
        await tg.wait_for(lambda: bool(received), timeout=5)
        assert received[0].text == "in flight at shutdown"
    finally:
        await again.stop()
    # The graceful stop confirmed it: a third start receives nothing.
    assert max(offsets_asked(tg)) == update_id + 1


def _update(update_id: int, text: str) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {"message_id": update_id, "date": int(time.time()), "text": text,
                    "chat": {"id": 77, "type": "private", "first_name": "W"},
                    "from": {"id": 77, "is_bot": False, "first_name": "W"}},
    }  # fmt: skip


async def test_webhook_answers_only_once_the_message_is_stored(tg: FakeTelegram) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    release = asyncio.Event()
    stored: list[str] = []

    async def handler(msg: IncomingMessage) -> None:
        if msg.text == "broken":
            raise OSError("spool disk full")
        await release.wait()
        stored.append(msg.text)

    adapter = TelegramAdapter(
        token=TOKEN, base_url=tg.base_url, webhook_url=url, webhook_listen="127.0.0.1", webhook_port=port,
        webhook_secret="s3cret", webhook_store_limit_s=0.2,
    )  # fmt: skip
    await adapter.start(handler, [])
    try:
        post = asyncio.create_task(tg.deliver_webhook(url, _update(1, "hello"), "s3cret"))
        await asyncio.sleep(0.3)
        assert not post.done(), "the webhook answered before the message was stored"
        release.set()
        assert await post == 200
        assert stored == ["hello"]
        # Not storable in time: an error status, so Telegram delivers the update again.
        assert await tg.deliver_webhook(url, _update(2, "broken"), "s3cret") == 500
        assert await tg.deliver_webhook(url, {"not": "an update"}, "s3cret") == 400
    finally:
        await adapter.stop()
