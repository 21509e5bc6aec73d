"""The cache keep-alive job through the real gateway, store and client against the fake API: a chat that
comes back every six minutes is refreshed just before its five-minute entry expires, so its next
message reads the prompt instead of paying for it again; the refresh generates and stores nothing and
is accounted as a keep-alive call; a refresh that finds nothing to read is not repeated."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text

from agent.caching.forecast import TurnStart
from agent.caching.plan import CacheState
from agent.caching.trust import RefreshRecord
from tests.fakes.anthropic import FakeAnthropic, RecordedRequest
from tests.support.gateway_bot import Bot, running_bot
from tests.support.memory_adapter import ADMIN, ALICE, BOB, Author, group_chat

BIG = "background: " + " ".join(f"fact{i} about the deployment" for i in range(900))


class Clock:
    """One simulated time for the turns (cache decisions) and the fake API's prefix cache."""

    def __init__(self, fake: FakeAnthropic) -> None:
        self.start = datetime.now(UTC).replace(microsecond=0)
        self.now = self.start
        self.fake = fake

    def at(self, seconds: float) -> datetime:
        self.now = self.start + timedelta(seconds=seconds)
        self.fake.set_time(seconds)
        return self.now


async def a_chat_that_comes_back_every_six_minutes(
    bot: Bot, clock: Clock, *, gap: float = 360.0, user: Author = ALICE
) -> int:
    """The first message of the chat, then its history made that of a chat whose requests came every
    six minutes (or `gap` seconds; 20 of them); returns the chat's key."""
    bot.gateway.clock = lambda: clock.now
    clock.at(0)
    await bot.adapter.say(BIG, user=user)
    chat_pk = await bot.chat_pk("telegram", user.user_id)
    session = await bot.store.active_session(chat_pk)
    state = CacheState.from_json(session.cache_state)
    assert [p.ttl for p in state.prefixes] == ["5m"]  # a new private chat writes for five minutes
    await comes_back_every(bot, chat_pk, gap=gap)
    return chat_pk


async def comes_back_every(bot: Bot, chat_pk: int, *, gap: float) -> None:
    """The chat's history made that of a chat whose 20 requests before its last came `gap` seconds apart."""
    session = await bot.store.active_session(chat_pk)
    state = CacheState.from_json(session.cache_state)
    last = state.turns[-1].at
    past = tuple(TurnStart(last - (20 - i) * gap, gap, 0) for i in range(20))
    history = {**state.to_json(), "turns": [t.to_json() for t in (*past, *state.turns)]}
    async with bot.store.engine.begin() as conn:
        await conn.execute(
            text("UPDATE sessions SET cache_state = :s WHERE id = :id"),
            {"s": json.dumps(history), "id": session.id},
        )


def warm(fake: FakeAnthropic) -> list[RecordedRequest]:
    return [r for r in fake.requests if r.kind == "warm"]


def usage(request: RecordedRequest) -> dict[str, Any]:
    assert request.usage is not None
    return dict(request.usage)


async def test_a_refresh_before_expiry_lets_the_next_message_read_the_prompt(sqlite_url: str) -> None:
    async with FakeAnthropic(clock=lambda: 0.0) as fake, running_bot(fake, sqlite_url) as bot:
        clock = Clock(fake)
        chat_pk = await a_chat_that_comes_back_every_six_minutes(bot, clock)
        first = usage(bot.replies()[0])
        stored = len(await bot.window(chat_id=ALICE.user_id))

        assert await bot.gateway.keeper.run(clock.at(120)) == []  # three minutes of life left: not yet
        refreshed = await bot.gateway.keeper.run(clock.at(240))
        assert [r.session_id for r in refreshed] == [(await bot.store.active_session(chat_pk)).id]

        (request,) = warm(fake)
        assert request.body["max_tokens"] == 0
        assert "context_management" not in request.body
        assert usage(request)["cache_read_input_tokens"] == first["cache_creation_input_tokens"] > 0
        assert usage(request)["cache_creation_input_tokens"] == 0
        assert usage(request)["output_tokens"] == 0
        assert len(await bot.window(chat_id=ALICE.user_id)) == stored  # nothing stored, nothing sent
        assert len(bot.adapter.sent) == 1
        calls = await bot.rows(
            "SELECT purpose, cache_read_tokens, cost_usd FROM llm_calls WHERE chat_pk = :c ORDER BY id",
            c=chat_pk,
        )
        assert [c.purpose for c in calls] == ["reply", "keepalive"]
        # 0.1x of the prompt at Sonnet 4.6's $3/MTok
        assert calls[1].cost_usd == pytest.approx(first["cache_creation_input_tokens"] * 0.3 / 1_000_000)

        clock.at(450)  # seven and a half minutes after the first message
        await bot.adapter.say("and what changed since?", user=ALICE, message_id="second")
        follow_up = usage(bot.replies()[-1])
        assert follow_up["cache_read_input_tokens"] >= first["cache_creation_input_tokens"]


async def test_how_a_refresh_turned_out_is_remembered_with_the_session(sqlite_url: str) -> None:
    async with FakeAnthropic(clock=lambda: 0.0) as fake, running_bot(fake, sqlite_url) as bot:
        clock = Clock(fake)
        chat_pk = await a_chat_that_comes_back_every_six_minutes(bot, clock)

        async def record() -> RefreshRecord:
            session = await bot.store.active_session(chat_pk)
            return CacheState.from_json(session.cache_state).refreshes

        assert len(await bot.gateway.keeper.run(clock.at(240))) == 1
        pending = (await record()).pending
        assert pending is not None
        assert (pending.life, 0.5 < pending.odds <= 1.0) == (300.0, True)

        clock.at(450)  # the chat came back within the life the refresh bought
        await bot.adapter.say("and what changed since?", user=ALICE, message_id="second")
        settled = await record()
        assert settled.pending is None
        assert (settled.expected, settled.came) == (pytest.approx(pending.odds), 1.0)
        assert settled.trust() > 1.0


async def test_an_entry_let_go_is_remembered_and_a_quick_return_raises_trust(sqlite_url: str) -> None:
    async with FakeAnthropic(clock=lambda: 0.0) as fake, running_bot(fake, sqlite_url) as bot:
        clock = Clock(fake)
        chat_pk = await a_chat_that_comes_back_every_six_minutes(bot, clock, gap=3 * 3_600.0)
        assert await bot.gateway.keeper.run(clock.at(240)) == []  # hours between its turns: let go
        assert warm(fake) == []
        session = await bot.store.active_session(chat_pk)
        pending = CacheState.from_json(session.cache_state).refreshes.pending
        assert pending is not None
        assert 0.0 < pending.odds < 0.2

        clock.at(450)  # yet the chat came back within the life a refresh would have bought
        await bot.adapter.say("and what changed since?", user=ALICE, message_id="second")
        session = await bot.store.active_session(chat_pk)
        record = CacheState.from_json(session.cache_state).refreshes
        assert (record.pending, record.came) == (None, 1.0)
        assert record.trust() > 1.0


async def test_without_keep_alive_the_same_message_pays_for_the_prompt_again(sqlite_url: str) -> None:
    async with (
        FakeAnthropic(clock=lambda: 0.0) as fake,
        running_bot(fake, sqlite_url, prompt_caching={"keep_alive": False}) as bot,
    ):
        clock = Clock(fake)
        await a_chat_that_comes_back_every_six_minutes(bot, clock)
        clock.at(450)
        await bot.adapter.say("and what changed since?", user=ALICE, message_id="second")
        assert warm(fake) == []
        assert usage(bot.replies()[-1])["cache_read_input_tokens"] == 0


async def test_a_refresh_that_reads_nothing_is_not_repeated(sqlite_url: str) -> None:
    async with FakeAnthropic(clock=lambda: 0.0) as fake, running_bot(fake, sqlite_url) as bot:
        clock = Clock(fake)
        chat_pk = await a_chat_that_comes_back_every_six_minutes(bot, clock)
        fake.cache.clear()  # the API let the entry go early: it promises no more than the TTL
        await bot.gateway.keeper.run(clock.at(240))
        (request,) = warm(fake)
        assert usage(request)["cache_read_input_tokens"] == 0
        state = CacheState.from_json((await bot.store.active_session(chat_pk)).cache_state)
        assert state.refresh_missed == state.prefixes[0].message_id
        # the written entry is not refreshed either: a second look a minute later sends nothing
        assert await bot.gateway.keeper.run(clock.at(270)) == []
        assert len(warm(fake)) == 1


async def test_after_a_compaction_nothing_stale_is_refreshed(
    sqlite_url: str,
) -> None:
    small: dict[str, Any] = {
        "model_context_length": 5120,
        "compression": {"protect_last_n": 2, "enabled": False},
    }
    async with FakeAnthropic(clock=lambda: 0.0) as fake, running_bot(fake, sqlite_url, **small) as bot:
        clock = Clock(fake)
        bot.gateway.clock = lambda: clock.now
        for i in range(6):
            clock.at(20.0 * i)
            await bot.adapter.say(f"fact{i}: " + " ".join(f"item{j}" for j in range(150)), user=ADMIN)
        chat_pk = await bot.chat_pk("telegram", ADMIN.user_id)
        before = CacheState.from_json((await bot.store.active_session(chat_pk)).cache_state)
        assert before.prefixes
        (reply,) = await bot.adapter.say("/compact", user=ADMIN)
        assert reply.text.startswith("Compaction ok: ")
        assert (await bot.store.active_session(chat_pk)).last_prompt_tokens is None
        assert await bot.gateway.keeper.run(clock.at(100.0 + 240)) == []
        assert warm(fake) == []


async def test_the_job_looks_only_at_sessions_due_and_then_at_their_next_entry(sqlite_url: str) -> None:
    async with FakeAnthropic(clock=lambda: 0.0) as fake, running_bot(fake, sqlite_url) as bot:
        clock = Clock(fake)
        chat_pk = await a_chat_that_comes_back_every_six_minutes(bot, clock, gap=3 * 3_600.0)
        session = await bot.store.active_session(chat_pk)
        (entry,) = CacheState.from_json(session.cache_state).prefixes
        # the turn saved its five-minute entry with the moment its refresh window opens
        assert session.cache_look_at == entry.at + timedelta(seconds=300 - 90)
        assert await bot.store.cache_looks_due(clock.at(200)) == []
        assert [s.id for s, _ in await bot.store.cache_looks_due(clock.at(240))] == [session.id]

        assert await bot.gateway.keeper.run(clock.at(240)) == []  # let go: hours between its turns
        # the window is still open (a later look may judge it again) until it closes
        assert (await bot.store.active_session(chat_pk)).cache_look_at == session.cache_look_at
        assert await bot.gateway.keeper.run(clock.at(295)) == []
        assert (await bot.store.active_session(chat_pk)).cache_look_at is None  # nothing left to keep
        assert await bot.store.cache_looks_due(clock.at(3_000)) == []
        assert warm(fake) == []


async def test_more_sessions_due_than_one_run_takes_are_all_refreshed(sqlite_url: str) -> None:
    async with FakeAnthropic(clock=lambda: 0.0) as fake, running_bot(fake, sqlite_url) as bot:
        clock = Clock(fake)
        chats = [
            await a_chat_that_comes_back_every_six_minutes(bot, clock, user=u) for u in (ALICE, BOB, ADMIN)
        ]
        first = await bot.gateway.keeper.run(clock.at(240), batch=2)
        second = await bot.gateway.keeper.run(clock.at(250), batch=2)
        assert (len(first), len(second)) == (2, 1)
        sessions = {(await bot.store.active_session(c)).id for c in chats}
        assert {r.session_id for r in first + second} == sessions
        assert await bot.gateway.keeper.run(clock.at(260), batch=2) == []  # each is due again in its new life


async def test_after_the_api_compacted_a_refresh_reads_the_prompt_that_starts_at_its_block(
    sqlite_url: str,
) -> None:
    server: dict[str, Any] = {
        "model_context_length": 110_000,  # half of it is above the API's 50,000-token trigger floor
        "context": {"engine": "server"},
        "compression": {"protect_last_n": 2},
    }
    async with FakeAnthropic(clock=lambda: 0.0) as fake, running_bot(fake, sqlite_url, **server) as bot:
        clock = Clock(fake)
        bot.gateway.clock = lambda: clock.now
        for n in range(8):
            clock.at(30.0 * n)
            await bot.adapter.say(f"day{n} " + " ".join(f"w{n}x{i} fact" for i in range(2_500)), user=ALICE)
        compacted = [r for r in fake.requests if r.compacted]
        assert len(compacted) == 1
        last = [r for r in fake.requests if r.kind == "reply"][-1]
        assert not last.compacted
        assert '"compaction"' in json.dumps(last.body["messages"])  # the prompt starts at the API's block
        written = usage(last)["cache_creation_input_tokens"]
        assert written > 0

        await comes_back_every(bot, await bot.chat_pk("telegram", ALICE.user_id), gap=360.0)
        refreshed = await bot.gateway.keeper.run(clock.at(30.0 * 7 + 240))
        assert len(refreshed) == 1
        (request,) = warm(fake)
        assert usage(request)["cache_read_input_tokens"] >= written  # read, not written again
        assert usage(request)["cache_creation_input_tokens"] == 0


async def test_a_group_whose_chatter_reached_the_compaction_threshold_is_not_kept_warm(
    sqlite_url: str,
) -> None:
    """Two groups with the same history (a mention every ninety minutes), each holding a one-hour entry
    about to expire; in one, chatter since the reply put the session at the compressor's threshold, so
    its next turn compacts before its first call and no request would read the refreshed prompt."""
    quiet, chatty = group_chat("-501", "Quiet"), group_chat("-502", "Chatty")
    opening = "@bot background: " + " ".join(f"fact{i} about the deployment" for i in range(250))
    async with (
        FakeAnthropic(clock=lambda: 0.0) as fake,
        running_bot(fake, sqlite_url, model_context_length=12_000) as bot,
    ):
        clock = Clock(fake)
        bot.gateway.clock = lambda: clock.now
        clock.at(0)
        keys = []
        for group in (quiet, chatty):
            await bot.adapter.say(opening, user=ALICE, chat=group, mentions_bot=True)
            chat_pk = await bot.chat_pk("telegram", group.chat_id)
            await comes_back_every(bot, chat_pk, gap=5_400.0)
            keys.append(chat_pk)
        for i in range(3):
            clock.at(60.0 + i)
            await bot.adapter.say(f"chatter {i}: " + opening[5:], user=BOB, chat=chatty)
        sessions = [await bot.store.active_session(k) for k in keys]
        engine = bot.gateway.kit.engine(sessions[1], [])
        assert engine.should_compress(sessions[1].context_tokens())  # the chatter reached the threshold
        assert not bot.gateway.kit.engine(sessions[0], []).should_compress(sessions[0].context_tokens())

        refreshed = await bot.gateway.keeper.run(clock.at(3_540))

        assert [r.session_id for r in refreshed] == [sessions[0].id]
        assert len(warm(fake)) == 1


def tool_names(request: RecordedRequest) -> list[str]:
    return [t["name"] for t in request.body.get("tools", [])]


async def test_a_worker_that_never_served_a_chat_with_media_refreshes_the_same_prompt(
    sqlite_url: str,
) -> None:
    """The tools are part of the cached prefix, and `view_media` is offered only in chats with media: a
    restarted or second worker's keep-alive learns that from the stored window, as a turn does."""
    async with FakeAnthropic(clock=lambda: 0.0) as fake, running_bot(fake, sqlite_url) as bot:
        clock = Clock(fake)
        bot.gateway.clock = lambda: clock.now
        clock.at(0)
        await bot.adapter.say(BIG + " and the diagram [photo m1] shows the deploy", user=ALICE)
        chat_pk = await bot.chat_pk("telegram", ALICE.user_id)
        await comes_back_every(bot, chat_pk, gap=360.0)
        (reply,) = bot.replies()
        assert "view_media" in tool_names(reply)
        async with running_bot(fake, sqlite_url) as other:  # started after the chat's turn
            refreshed = await other.gateway.keeper.run(clock.at(240))
        assert len(refreshed) == 1
        (request,) = warm(fake)
        assert tool_names(request) == tool_names(reply)
        assert usage(request)["cache_read_input_tokens"] == usage(reply)["cache_creation_input_tokens"] > 0
        assert usage(request)["cache_creation_input_tokens"] == 0
