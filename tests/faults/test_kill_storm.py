"""A message storm across four Telegram chats while the gateway is killed with SIGKILL and restarted.

The real `python -m gateway run` process, python-telegram-bot against the fake Bot API (whose getUpdates
returns an update again until a later call confirms it, as Telegram does), SQLite and Postgres. Kills
land right after a getUpdates answer carrying updates reached the gateway (the moment an early
confirmation used to lose messages), in the middle of model calls, and at random moments. Afterwards
every message is stored exactly once and every addressed message is answered exactly once.

Kills are kept out of the short window between a model response and the reply reaching Telegram
(every strategy waits for a moment when no model response has just ended): the outgoing side (a
reply marked answered but not yet delivered) is the delivery layer's concern and has its own tests.
On a loaded machine a kill can still land there; what that does is told apart from a repeated turn
by the recorded reply parts (`shown_replies`): a part the killed process sent but did not record is
sent again by the restart (the Bot API has no idempotency key), and a part it recorded but did not
send is sent later, after newer ones. Every message is still answered by one recorded reply at most.
Reproduce a run with STORM_SEED=<seed>; the seed is printed on failure.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import select

from gateway.store import Store
from gateway.store.deliveries.reply_parts import deliveries
from gateway.store.rows import chats
from tests.e2e.harness import GatewayProcess
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.anthropic.replies import newest_user_text
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram.wire import Sent
from tests.faults.conftest import TG_TOKEN, telegram_env
from tests.faults.load_support import stored_messages, wait_until

pytestmark = pytest.mark.slow

USERS = (501, 502, 503)
GROUP = -1900
CHATS = (501, 502, 503, GROUP)
"""Three private chats (chat id = user id) and a group where two of the users talk."""
BOT = "gateway_test_bot"
MARKER = re.compile(r"\bk(\d)n(\d+)\b")
"""Every message carries `k<chat index>n<number>` so requests and replies tell what they answer."""
KILLS = ("after_get_updates", "mid_model_call", "after_get_updates", "random", "after_get_updates")
OUTGOING_GUARD_S = 0.4
"""No kill within this long after a model response (its reply may be on its way to Telegram)."""


@dataclass
class Pushed:
    chat: int
    index: int
    number: int
    update_id: int
    message_id: int
    addressed: bool


@dataclass
class KillRecord:
    strategy: str
    at: float
    fetched: list[int] = field(default_factory=list)
    not_stored_at_kill: list[int] = field(default_factory=list)


class StormAnthropic(FakeAnthropic):
    """The fake model, answering each reply after a random 0.2-1.2 s and telling when each ends.

    A reply names every marker of the newest user text (the messages it answers), never cut short: the
    default echo stops at 400 characters, and the messages a slow restart leaves waiting in a group are
    longer than that together, so the echo lost the newest markers (the newest question looked unanswered).
    """

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self._rng = rng
        self.in_flight: dict[int, float] = {}
        """Scheduled end (monotonic) of each reply request being answered."""
        self.ended: list[float] = []
        self.on_reply_started: Callable[[float], None] | None = None

    async def __aenter__(self) -> StormAnthropic:
        await self.start()
        return self

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        delay = self._rng.uniform(0.2, 1.2)
        self.reply_delay = delay  # read by the parent before its first await
        key = id(request)
        self.in_flight[key] = time.monotonic() + delay
        if self.on_reply_started is not None:
            self.on_reply_started(delay)
        try:
            return await super()._messages(request)
        finally:
            self.in_flight.pop(key, None)
            self.ended.append(time.monotonic())

    def _default_text(self, body: Mapping[str, Any], kind: str, max_tokens: int) -> str:
        if kind == "summary":
            return super()._default_text(body, kind, max_tokens)
        return "answers " + " ".join(m.group(0) for m in MARKER.finditer(newest_user_text(body)))

    def outgoing_quiet(self) -> bool:
        """No model response just ended or is about to: no reply can be between "answered" and sent."""
        now = time.monotonic()
        if self.ended and now - self.ended[-1] < OUTGOING_GUARD_S:
            return False
        return all(end - now > 0.05 for end in self.in_flight.values())


class Storm:
    def __init__(self, seed: int, tmp_path: Path, db_url: str, llm: StormAnthropic, tg: FakeTelegram) -> None:
        self.rng = random.Random(seed)
        self.tmp_path = tmp_path
        self.db_url = db_url
        self.llm = llm
        self.tg = tg
        self.env = telegram_env(
            tmp_path,
            db_url,
            llm,
            tg,
            TELEGRAM_ALLOWED_USERS=",".join(str(u) for u in USERS),
            LIMITS__USER_MESSAGES_PER_MINUTE="100000",
            LIMITS__CHAT_DAILY_BUDGET_USD="0",
            # Known gap: a kill while a group reply is being written leaves its partial preview message
            # on screen and the restart answers in a new message, which this storm counts as a repeat.
            STREAMING__ENABLED="false",
        )
        self.pushed: list[Pushed] = []
        self.kills: list[KillRecord] = []
        self.gw: GatewayProcess | None = None
        self.stop_pushing = asyncio.Event()
        self._numbers = dict.fromkeys(CHATS, 0)
        self.resent = 0
        """Replies Telegram took twice: sent, the process killed before recording it, sent again."""
        self.delayed = 0
        """Replies recorded by a process killed before sending them, so sent later (or not yet)."""

    # -- traffic -------------------------------------------------------------------------------------

    def push_one(self) -> None:
        index = self.rng.randrange(len(CHATS))
        chat = CHATS[index]
        self._numbers[chat] += 1
        number = self._numbers[chat]
        marker = f"k{index}n{number}"
        if chat == GROUP:
            user = self.rng.choice(USERS[:2])
            addressed = self.rng.random() < 0.5
            text = f"@{BOT} {marker} what do you think?" if addressed else f"{marker} just chatting"
            update = self.tg.push_message(
                GROUP, text, user_id=user, first_name=f"U{user}", chat_type="group", chat_title="Team"
            )
        else:
            addressed = True
            update = self.tg.push_message(chat, f"{marker} question", user_id=chat, first_name=f"U{chat}")
        self.pushed.append(
            Pushed(chat, index, number, update["update_id"], update["message"]["message_id"], addressed)
        )

    async def push(self) -> None:
        """Messages every 0.05-0.4 s until told to stop, then a short tail."""
        while not self.stop_pushing.is_set():
            self.push_one()
            await asyncio.sleep(self.rng.uniform(0.05, 0.4))
        for _ in range(4):
            self.push_one()
            await asyncio.sleep(self.rng.uniform(0.05, 0.2))

    # -- the process ---------------------------------------------------------------------------------

    async def start(self) -> None:
        self.gw = GatewayProcess(self.env, cwd=self.tmp_path)
        await self.gw.start(timeout=60)

    def _kill_now(self, record: KillRecord) -> None:
        gw = self.gw
        if gw is not None and gw.proc is not None and gw.proc.returncode is None:
            record.at = time.monotonic()
            gw.proc.kill()

    async def kill(self, strategy: str) -> None:
        record = KillRecord(strategy, 0.0)
        fired = asyncio.Event()
        loop = asyncio.get_running_loop()

        def fire(delay: float) -> None:
            fired.set()
            loop.call_later(delay, self._kill_now, record)

        if strategy == "after_get_updates":

            def on_updates(ids: list[int]) -> None:
                if not fired.is_set() and self.llm.outgoing_quiet():
                    record.fetched = ids
                    fire(self.rng.uniform(0.0, 0.004))

            self.tg.on_updates_sent = on_updates
        elif strategy == "mid_model_call":
            armed = False

            def kill_if_quiet() -> None:
                # Another chat's reply may have just ended: then wait for the next model call.
                nonlocal armed
                armed = False
                if not fired.is_set() and self.llm.outgoing_quiet():
                    fire(0.0)

            def on_reply(delay: float) -> None:
                nonlocal armed
                if not fired.is_set() and not armed:
                    armed = True
                    loop.call_later(self.rng.uniform(0.1, 0.8) * delay, kill_if_quiet)

            self.llm.on_reply_started = on_reply
        else:
            await asyncio.sleep(self.rng.uniform(0.2, 2.0))
            for _ in range(1000):  # the first quiet moment from here
                if self.llm.outgoing_quiet():
                    break
                await asyncio.sleep(0.01)
            fire(0.0)
        try:
            await asyncio.wait_for(fired.wait(), 30)
        finally:
            self.tg.on_updates_sent = None
            self.llm.on_reply_started = None
        assert self.gw is not None
        assert self.gw.proc is not None
        await asyncio.wait_for(self.gw.proc.wait(), 10)
        await self.gw.kill()
        if record.fetched:
            stored = {int(r.platform_message_id or 0) for r in await stored_messages(self.db_url)}
            by_update = {p.update_id: p.message_id for p in self.pushed}
            record.not_stored_at_kill = [u for u in record.fetched if by_update.get(u) not in stored]
        self.kills.append(record)

    # -- what users see ------------------------------------------------------------------------------

    async def settled(self) -> bool:
        rows = [r for r in await stored_messages(self.db_url, platform="telegram") if r.role == "user"]
        stored = {int(r.platform_message_id or 0) for r in rows}
        if not all(p.message_id in stored for p in self.pushed):
            return False
        return all(r.replied for r in rows if r.needs_reply)

    def describe(self) -> str:
        kills = ", ".join(
            f"{k.strategy}(fetched={k.fetched}, not stored={k.not_stored_at_kill})" for k in self.kills
        )
        return (
            f"{len(self.pushed)} messages; kills: {kills}; "
            f"replies sent again after a kill: {self.resent}, delayed by a kill: {self.delayed}"
        )


def _markers(text: str) -> list[tuple[int, int]]:
    return [(int(m.group(1)), int(m.group(2))) for m in MARKER.finditer(text)]


async def run_storm(seed: int, tmp_path: Path, db_url: str) -> Storm:
    async with StormAnthropic(random.Random(seed ^ 0x5EED)) as llm, FakeTelegram(token=TG_TOKEN) as tg:
        storm = Storm(seed, tmp_path, db_url, llm, tg)
        await storm.start()
        pusher = asyncio.create_task(storm.push())
        try:
            for strategy in KILLS:
                await asyncio.sleep(storm.rng.uniform(0.3, 1.5))
                await storm.kill(strategy)
                await asyncio.sleep(storm.rng.uniform(0.0, 0.5))
                await storm.start()
            storm.stop_pushing.set()
            await pusher
            try:
                await wait_until(storm.settled, timeout=60, what="every message stored and answered")
            except AssertionError:
                pass  # the checks below say what is missing
            else:
                await asyncio.sleep(1.5)  # a duplicate answer would show up now
        finally:
            storm.stop_pushing.set()
            await asyncio.gather(pusher, return_exceptions=True)
            if storm.gw is not None:
                await storm.gw.stop()
        try:
            rows = await stored_messages(db_url, platform="telegram")
            check(storm, rows, tg, await reply_parts(db_url))
        except AssertionError as exc:
            exc.add_note(storm.describe())
            raise
        return storm


def check(storm: Storm, rows: list[Any], tg: FakeTelegram, parts: list[Part]) -> None:
    users = [r for r in rows if r.role == "user"]
    counts: dict[int, int] = {}
    for row in users:
        counts[int(row.platform_message_id)] = counts.get(int(row.platform_message_id), 0) + 1
    by_id = {int(r.platform_message_id): r for r in users}
    missing = [p for p in storm.pushed if p.message_id not in by_id]
    assert not missing, f"lost messages: {[(p.chat, p.number) for p in missing]}"
    twice = {mid: n for mid, n in counts.items() if n != 1}
    assert not twice, f"stored more than once: {twice}"
    for p in storm.pushed:
        row = by_id[p.message_id]
        assert row.needs_reply == p.addressed, (p, row)
        if p.addressed:
            assert row.replied, f"k{p.index}n{p.number} is marked unanswered"
    kills = [k.at for k in storm.kills]
    assert not [s for s in tg.sent if s.edited], "a reply was edited (streaming is off)"
    for index, chat in enumerate(CHATS):
        replies = shown_replies(chat, [s for s in tg.sent if s.chat_id == chat], parts, kills)
        storm.resent += sum(len(r.sends) - 1 for r in replies)
        storm.delayed += sum(r.delayed for r in replies)
        answered: dict[int, int] = {}
        echoed = []
        for n, reply in enumerate(replies):
            marks = [m for i, m in _markers(reply.part.text) if i == index]
            assert marks, f"a reply in chat {chat} answers nothing of this chat: {reply.part.text!r}"
            for mark in marks:
                # Each message is answered by one reply at most: a second turn over answered messages
                # (a reply recorded twice) shows here, whatever the order the replies reached the chat.
                assert mark not in answered, (
                    f"chat {chat} got a repeated answer: k{index}n{mark} in replies {answered[mark]}, {n}: "
                    f"{[r.part.text for r in replies]}"
                )
                answered[mark] = n
            echoed.append(max(marks))
        # Each reply answers messages newer than the previous reply did; only a reply whose sending a
        # kill interrupted (sent by the restart, or not yet) may come after newer ones.
        in_order = [e for e, r in zip(echoed, replies, strict=True) if not r.delayed]
        assert in_order == sorted(in_order), f"chat {chat} got answers out of order: {echoed}"
        addressed = [p.number for p in storm.pushed if p.chat == chat and p.addressed]
        if addressed:
            assert echoed, f"chat {chat} got no answer"
            assert max(echoed) >= max(addressed), f"chat {chat}: the newest question unanswered"
        for number in addressed:
            assert any(e >= number for e in echoed), f"chat {chat}: k{index}n{number} never answered"
    assert all(k.at for k in storm.kills), "every planned kill happened"


@dataclass
class Part:
    """A reply part as the gateway recorded it (a `deliveries` row)."""

    chat: int
    text: str
    state: str
    message_id: int | None
    """The Telegram message the gateway recorded as this part, once sent."""
    recorded_at: float
    """When the turn recorded it, on the test's monotonic clock."""


async def reply_parts(db_url: str) -> list[Part]:
    to_monotonic = time.monotonic() - time.time()
    store = await Store.open(db_url, pool_size=1, max_overflow=0)
    try:
        async with store.engine.connect() as conn:
            result = await conn.execute(
                select(deliveries, chats.c.chat_id)
                .join(chats, chats.c.id == deliveries.c.chat_pk)
                .order_by(deliveries.c.id)
            )
            return [
                Part(
                    int(r.chat_id),
                    r.text,
                    r.state,
                    int(r.platform_message_id) if r.platform_message_id else None,
                    r.created_at.timestamp() + to_monotonic,
                )
                for r in result
            ]
    finally:
        await store.close()


@dataclass
class Shown:
    """One recorded reply part of a chat and the Telegram messages that show it, oldest first."""

    part: Part
    sends: list[Sent]
    delayed: bool = False
    """The process that recorded it was killed before sending it; a later one sent it (or will)."""


def shown_replies(chat: int, sent: list[Sent], parts: list[Part], kills: list[float]) -> list[Shown]:
    """The chat's reply parts in the order their first message reached the chat, then those never sent.

    A message is the part that recorded its Telegram message id. A message no part recorded must be a
    part sent by a process killed before it recorded the send: the restart sends the part again (the
    Bot API has no idempotency key), or leaves it claimed until the claim is stale (30 s). So it must
    have a part's text, and a kill must come after it and before that part's next message; a part that
    recorded none of its messages is still claimed ("sending": a graceful stop puts an interrupted send
    back to pending). A second message of a part with no kill between fails here.
    """
    mine = [p for p in parts if p.chat == chat]
    recorded = {p.message_id: p for p in mine if p.message_id is not None}
    shown: dict[int, Shown] = {}
    for message in sent:
        part = recorded.get(message.message_id) or next(
            (p for p in mine if p.text.split() == message.visible_text.split()), None
        )
        assert part is not None, f"chat {chat}: no recorded reply is {message.visible_text!r}"
        shown.setdefault(id(part), Shown(part, [])).sends.append(message)
    for reply in shown.values():
        part, sends = reply.part, reply.sends
        for earlier, later in itertools.pairwise(sends):
            assert any(earlier.at < k < later.at for k in kills), (
                f"chat {chat}: {part.text!r} sent twice with no kill between"
            )
        if part.message_id != sends[-1].message_id:
            assert part.message_id is None, (part, sends)
            assert part.state == "sending", (part, sends)
            assert any(k > sends[-1].at for k in kills), f"chat {chat}: {part.text!r} sent, not recorded"
        reply.delayed = any(part.recorded_at < k < sends[0].at for k in kills)
    unsent = [p for p in mine if id(p) not in shown]
    assert all(p.state == "sending" and any(k > p.recorded_at for k in kills) for p in unsent), (
        f"chat {chat}: replies recorded and never sent: {unsent}"
    )
    ordered = sorted(shown.values(), key=lambda r: r.sends[0].at)
    return ordered + [Shown(p, [], delayed=True) for p in unsent]


@pytest.mark.timeout(240)
async def test_kill_storm_loses_and_repeats_nothing(tmp_path: Path, db_url: str) -> None:
    seed = int(os.environ.get("STORM_SEED") or random.SystemRandom().randrange(2**32))
    try:
        storm = await run_storm(seed, tmp_path, db_url)
        at_risk = sum(len(k.not_stored_at_kill) for k in storm.kills)
        # The run must have hit the dangerous moment: updates fetched but not yet stored at a kill.
        assert at_risk, f"no kill caught a fetched, unstored update ({storm.describe()})"
    except BaseException as exc:
        exc.add_note(f"reproduce with STORM_SEED={seed}")
        raise
