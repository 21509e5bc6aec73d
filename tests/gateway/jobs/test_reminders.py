"""The reminders ticker on both backends with a clock the test moves: a reminder is sent once, on time,
in the chat it was set in; downtime, killed workers, two workers, cancel and DST behave as promised."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from gateway.commands.menu import CommandContext
from gateway.commands.reminders import ReminderHandlers, reminder_stats
from gateway.config import RemindersSettings
from gateway.jobs.reminders import ReminderTicker
from gateway.platforms.base import ChatRef
from gateway.platforms.router import Platforms
from gateway.reply.posting import ChatPoster
from gateway.store import Store
from gateway.store.reminders import NewReminder, ReminderRecord
from tests.support.memory_adapter import ADMIN, ALICE, BOB, MemoryAdapter, group_chat

T0 = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)


@dataclass
class Clock:
    at: datetime = T0

    def __call__(self) -> datetime:
        return self.at

    def move(self, **delta: float) -> None:
        self.at += timedelta(**delta)


@dataclass
class Worker:
    store: Store
    adapter: MemoryAdapter
    ticker: ReminderTicker

    def texts(self) -> list[str]:
        return self.adapter.texts()


async def open_worker(db_url: str, clock: Clock, *, platform: str = "telegram", **settings: object) -> Worker:
    store = await Store.open(db_url, clock=clock)
    adapter = MemoryAdapter(name=platform)
    poster = ChatPoster(store=store, platforms=Platforms([adapter]))
    ticker = ReminderTicker(
        store=store, poster=poster, tasks=None, settings=RemindersSettings(**settings), clock=clock
    )
    return Worker(store, adapter, ticker)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def worker(db_url: str, clock: Clock) -> AsyncIterator[Worker]:
    opened = await open_worker(db_url, clock)
    yield opened
    await opened.store.close()


GROUP = group_chat("-500", "Team")


async def chat_pk(store: Store, chat: ChatRef = GROUP) -> int:
    return (
        await store.get_or_create_chat(chat.platform, chat.chat_id, kind=chat.kind.value, title=chat.title)
    ).id


async def remind(
    store: Store,
    at: datetime,
    text: str = "call the bank",
    *,
    rrule: str | None = None,
    tz: str = "UTC",
    kind: str = "reminder",
    creator: str | None = ALICE.user_id,
) -> ReminderRecord:
    new = NewReminder(
        await chat_pk(store), kind, text, rrule, tz, at, creator_id=creator, creator_name="Alice"
    )
    record = await store.add_reminder(new, max_active=50)
    assert record is not None
    return record


async def test_a_reminder_is_sent_once_on_time_as_written_and_joins_the_history(
    worker: Worker, clock: Clock
) -> None:
    reminder = await remind(worker.store, T0 + timedelta(seconds=10), "Drink water")
    clock.move(seconds=9)
    assert await worker.ticker.tick() == 0
    clock.move(seconds=2)  # one tick after the due time
    assert await worker.ticker.tick() == 1
    clock.move(seconds=1)
    assert await worker.ticker.tick() == 0
    assert worker.texts() == ["⏰ Reminder: Drink water"]
    assert worker.adapter.sent[0].chat == GROUP
    assert await worker.store.occurrence_states(reminder.id) == [(reminder.first_at, "delivered", "out-1")]
    session = await worker.store.active_session(reminder.chat_pk)
    rows = await worker.store.load_window(session.id)
    assert [(r.role, r.text, r.platform_message_id) for r in rows] == [
        ("assistant", "⏰ Reminder: Drink water", "out-1")
    ]
    assert await worker.store.pending_reminders(reminder.chat_pk) == []
    counts = await worker.store.reminder_counts(reminder.chat_pk)
    assert reminder_stats(counts)[0].render() == "Reminders: 0 pending, 1 delivered (0 late), 0 missed"


async def test_two_workers_at_the_due_time_send_it_once(db_url: str, clock: Clock) -> None:
    first, second = await open_worker(db_url, clock), await open_worker(db_url, clock)
    try:
        for n in range(5):
            await remind(first.store, T0 + timedelta(seconds=5), f"note {n}")
        clock.move(seconds=6)
        for _ in range(3):
            await asyncio.gather(first.ticker.tick(), second.ticker.tick())
        sent = first.texts() + second.texts()
    finally:
        await first.store.close()
        await second.store.close()
    assert sorted(sent) == [f"⏰ Reminder: note {n}" for n in range(5)]


async def test_a_worker_of_another_platform_leaves_the_chat_to_its_own(db_url: str, clock: Clock) -> None:
    discord, telegram = await open_worker(db_url, clock, platform="discord"), await open_worker(db_url, clock)
    try:
        await remind(discord.store, T0 + timedelta(seconds=5))
        clock.move(seconds=6)
        assert await discord.ticker.tick() == 0  # not claimed, not failed: a Telegram chat
        assert await telegram.ticker.tick() == 1
    finally:
        await discord.store.close()
        await telegram.store.close()
    assert (discord.texts(), telegram.texts()) == ([], ["⏰ Reminder: call the bank"])


async def test_a_worker_killed_before_the_time_leaves_it_to_the_other(db_url: str, clock: Clock) -> None:
    killed, survivor = await open_worker(db_url, clock), await open_worker(db_url, clock)
    try:
        await remind(killed.store, T0 + timedelta(minutes=1))
        clock.move(seconds=50)
        await killed.ticker.tick()
        await killed.store.close()  # the process is gone before the due time
        clock.move(seconds=11)
        await survivor.ticker.tick()
        await survivor.ticker.tick()
    finally:
        await survivor.store.close()
    assert killed.texts() == []
    assert survivor.texts() == ["⏰ Reminder: call the bank"]


async def test_due_while_every_worker_was_down_it_comes_late_once_naming_its_time(
    worker: Worker, clock: Clock
) -> None:
    reminder = await remind(worker.store, T0 + timedelta(minutes=1), tz="Europe/Berlin")
    clock.move(hours=3)  # nobody ran across the due time
    await worker.ticker.tick()
    await worker.ticker.tick()
    assert worker.texts() == [
        "⏰ Reminder: call the bank\n"
        "(sent late: it was due Mon 7 Dec 2026, 09:01 CET, while the bot was down)"
    ]
    counts = await worker.store.reminder_counts(reminder.chat_pk)
    assert reminder_stats(counts)[0].render() == "Reminders: 0 pending, 1 delivered (1 late), 0 missed"


async def test_past_the_late_window_it_is_missed_and_the_chat_is_told(worker: Worker, clock: Clock) -> None:
    reminder = await remind(worker.store, T0 + timedelta(minutes=1))
    clock.move(hours=30)
    await worker.ticker.tick()
    assert worker.texts() == [
        "⏰ Missed reminder: call the bank\n(it was due Mon 7 Dec 2026, 08:01 UTC; the bot was down for "
        "longer than 24 h after that, so it was not sent on its own)"
    ]
    assert [s for _, s, _ in await worker.store.occurrence_states(reminder.id)] == ["missed"]


async def test_a_send_interrupted_twice_is_marked_failed_never_sent_a_third_time(
    worker: Worker, clock: Clock
) -> None:
    reminder = await remind(worker.store, T0 + timedelta(seconds=5), "pay rent")
    clock.move(seconds=6)
    await worker.store.advance_reminders(lambda r, now: (r.first_at, None))
    assert len(await worker.store.claim_occurrences(stale_before=clock())) == 1  # claimed; worker killed
    clock.move(seconds=30)
    await worker.ticker.tick()
    assert worker.texts() == []  # a claim this young may still be sending: left alone
    clock.move(seconds=60)
    assert len(await worker.store.claim_occurrences(stale_before=clock())) == 1  # the repeat; killed too
    clock.move(minutes=2)
    await worker.ticker.tick()
    await worker.ticker.tick()
    assert worker.texts() == []
    assert [s for _, s, _ in await worker.store.occurrence_states(reminder.id)] == ["failed"]
    counts = await worker.store.reminder_counts(reminder.chat_pk)
    assert (
        reminder_stats(counts)[0].render() == "Reminders: 0 pending, 0 delivered (0 late), 0 missed, 1 failed"
    )


async def test_one_interruption_gives_one_more_send_with_the_note(worker: Worker, clock: Clock) -> None:
    await remind(worker.store, T0 + timedelta(seconds=5), "call mum")
    clock.move(seconds=6)
    await worker.store.advance_reminders(lambda r, now: (r.first_at, None))
    await worker.store.claim_occurrences(stale_before=clock())  # a worker claims it and is killed
    clock.move(minutes=2)
    await worker.ticker.tick()
    await worker.ticker.tick()
    assert worker.texts() == [
        "⏰ Reminder: call mum\n(sent late: it was due Mon 7 Dec 2026, 08:00 UTC, while the bot was down)\n"
        "(may be a repeat: the previous attempt was interrupted)"
    ]


async def test_cancel_by_its_creator_or_an_admin_only(worker: Worker, clock: Clock) -> None:
    reminder = await remind(worker.store, T0 + timedelta(minutes=5))
    handlers = ReminderHandlers(worker.store, "UTC", clock)
    pk = reminder.chat_pk

    def ctx(text: str, user: object, admin: bool = False) -> CommandContext:
        message = worker.adapter.incoming(f"/reminders {text}", user=user, chat=GROUP)  # type: ignore[arg-type]
        return CommandContext(message, pk, admin, text)

    listing = await handlers.reminders(ctx("", ALICE))
    assert listing == (
        "Pending reminders (UTC):\n"
        f"#{reminder.id} Mon 7 Dec 2026, 08:05 UTC, once: call the bank\n"
        "Cancel one with /reminders cancel <id>."
    )
    refused = await handlers.reminders(ctx(f"cancel {reminder.id}", BOB))
    assert refused == f"Reminder #{reminder.id} was set by Alice; only they or an admin can cancel it."
    assert await handlers.reminders(ctx(f"cancel {reminder.id}", ADMIN, admin=True)) == (
        f"Reminder #{reminder.id} cancelled."
    )
    assert await handlers.reminders(ctx(f"cancel {reminder.id}", ALICE)) == (
        f"There is no pending reminder #{reminder.id} in this chat (see /reminders)."
    )
    clock.move(minutes=10)
    assert await worker.ticker.tick() == 0
    assert worker.texts() == []
    assert await handlers.reminders(ctx("", ALICE)) == "No pending reminders. (Time zone: UTC.)"


async def test_a_daily_repeat_keeps_its_local_time_across_a_dst_change(worker: Worker, clock: Clock) -> None:
    berlin = ZoneInfo("Europe/Berlin")
    start = datetime(2026, 3, 27, 9, 0, tzinfo=berlin)  # summer time starts on Sunday 29 March
    clock.at = start.astimezone(UTC) - timedelta(minutes=1)
    reminder = await remind(worker.store, start, "stand-up", rrule="FREQ=DAILY", tz="Europe/Berlin")
    fired: list[datetime] = []
    for day in range(27, 32):  # a tick a second before and a second after 09:00 on the chat's clock
        nine = datetime(2026, 3, day, 9, 0, tzinfo=berlin).astimezone(UTC)
        clock.at = nine - timedelta(seconds=1)
        assert await worker.ticker.tick() == 0
        clock.at = nine + timedelta(seconds=1)
        if await worker.ticker.tick():
            fired.append(clock())
    due = [d for d, state, _ in await worker.store.occurrence_states(reminder.id) if state == "delivered"]
    assert [d.astimezone(berlin).strftime("%d %H:%M %Z") for d in due] == [
        "27 09:00 CET",
        "28 09:00 CET",
        "29 09:00 CEST",
        "30 09:00 CEST",
        "31 09:00 CEST",
    ]
    assert [d.hour for d in due] == [8, 8, 7, 7, 7]  # in UTC the hour moves
    assert len(fired) == 5
    assert worker.texts() == ["⏰ Reminder: stand-up"] * 5  # each within a tick of its time: no late note
    pending = await worker.store.pending_reminders(reminder.chat_pk)
    assert pending[0].next_due_at == datetime(2026, 4, 1, 9, 0, tzinfo=berlin)


async def test_a_long_outage_collapses_a_repeat_to_one_catch_up(worker: Worker, clock: Clock) -> None:
    reminder = await remind(worker.store, T0 + timedelta(hours=1), "water the plants", rrule="FREQ=DAILY")
    clock.move(days=3, hours=2)  # down across three due times
    await worker.ticker.tick()
    await worker.ticker.tick()
    states = await worker.store.occurrence_states(reminder.id)
    assert [(d, s) for d, s, _ in states] == [(T0 + timedelta(days=3, hours=1), "delivered")]
    assert len(worker.texts()) == 1
    assert worker.texts()[0].startswith("⏰ Reminder: water the plants\n(sent late: it was due Thu 10 Dec")
    pending = await worker.store.pending_reminders(reminder.chat_pk)
    assert pending[0].next_due_at == T0 + timedelta(days=4, hours=1)


async def test_timezone_is_per_chat_and_checked(worker: Worker, clock: Clock) -> None:
    handlers = ReminderHandlers(worker.store, "UTC", clock)
    pk = await chat_pk(worker.store)
    message = worker.adapter.incoming("/timezone", chat=GROUP)
    assert await handlers.timezone(CommandContext(message, pk, False, "Mars/Olympus")) == (
        "Unknown time zone 'Mars/Olympus'. Use an IANA name such as Europe/Berlin, America/New_York or UTC."
    )
    assert await handlers.timezone(CommandContext(message, pk, False, "Asia/Tokyo")) == (
        "Time zone for this chat: Asia/Tokyo (now Mon 7 Dec 2026, 17:00 JST)."
    )
    assert await worker.store.chat_timezone(pk) == "Asia/Tokyo"
