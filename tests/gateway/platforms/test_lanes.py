"""Per-chat lanes (order within a chat, concurrency across chats) and the hand-over retry."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

import pytest

from gateway.platforms.base import Author, ChatRef, IncomingMessage
from gateway.platforms.lanes import ChatLanes, hand_over


def message(text: str = "hello") -> IncomingMessage:
    return IncomingMessage(
        chat=ChatRef("telegram", "1"),
        author=Author("1", "Ann"),
        text=text,
        platform_message_id="7",
        sent_at=datetime.now(UTC),
    )


async def test_one_chat_runs_in_order_while_other_chats_run_alongside() -> None:
    lanes = ChatLanes("test")
    events: list[str] = []
    release = asyncio.Event()

    async def item(name: str, *, wait: bool = False) -> str:
        events.append(f"start {name}")
        if wait:
            await release.wait()
        events.append(f"end {name}")
        return name

    a1 = lanes.submit("a", lambda: item("a1", wait=True))
    a2 = lanes.submit("a", lambda: item("a2"))
    b1 = lanes.submit("b", lambda: item("b1"))
    assert await b1 == "b1"
    assert "start a2" not in events, "a2 started before a1 finished"
    assert len(lanes) == 2
    release.set()
    assert (await a1, await a2) == ("a1", "a2")
    assert events.index("end a1") < events.index("start a2")
    assert len(lanes) == 0


async def test_a_failed_or_cancelled_item_does_not_stop_its_lane() -> None:
    lanes = ChatLanes("test")

    async def boom() -> str:
        raise RuntimeError("bug")

    async def forever() -> str:
        await asyncio.Event().wait()
        return "never"

    async def fine() -> str:
        return "fine"

    failed = lanes.submit("a", boom)
    stuck = lanes.submit("a", forever)
    after = lanes.submit("a", fine)
    with pytest.raises(RuntimeError):
        await failed
    await asyncio.sleep(0.05)
    stuck.cancel()
    assert await after == "fine"


async def test_drain_waits_then_cancels_what_is_left() -> None:
    lanes = ChatLanes("test")
    quick = lanes.submit("a", lambda: asyncio.sleep(0.05))
    slow = lanes.submit("b", lambda: asyncio.sleep(30))
    assert await lanes.drain(0.3) == 1
    assert quick.done()
    assert not quick.cancelled()
    assert slow.cancelled()


async def test_hand_over_retries_until_the_handler_returns(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    async def flaky(msg: IncomingMessage) -> None:
        calls.append(msg.text)
        if len(calls) < 3:
            raise OSError("disk full")

    with caplog.at_level(logging.INFO, logger="gateway.platforms.lanes"):
        assert await hand_over(flaky, message(), platform="telegram", delays=(0.01,))
    assert calls == ["hello"] * 3
    assert "could not be stored (attempt 2); not acknowledged" in caplog.text
    assert "stored after 2 failed attempt(s)" in caplog.text


async def test_hand_over_gives_up_after_its_limit() -> None:
    now = [0.0]

    async def broken(msg: IncomingMessage) -> None:
        now[0] += 1.0
        raise OSError("disk full")

    assert not await hand_over(
        broken, message(), platform="discord", give_up_after_s=2.5, delays=(0.0,), clock=lambda: now[0]
    )
    assert now[0] == 3.0
