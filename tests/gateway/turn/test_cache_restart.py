"""The session's cache state is stored with it: a restart between two turns changes nothing about how the
second turn marks its request, and it still reads the prefix the first turn cached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.caching.plan import CacheState
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import running_bot
from tests.support.memory_adapter import ALICE, MemoryAdapter

BIG = "background: " + " ".join(f"fact{i} about the deployment" for i in range(900))


def markers(body: dict[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    """(message index, block index, cache_control) of every marked block of a request."""
    found = []
    for i, message in enumerate(body["messages"]):
        if isinstance(message["content"], list):
            for j, block in enumerate(message["content"]):
                if "cache_control" in block:
                    found.append((i, j, block["cache_control"]))
    return found


async def two_turns(db_url: str, *, restart: bool) -> tuple[dict[str, Any], dict[str, Any], CacheState]:
    """Turn 1 (with a tool round) and turn 2 a minute later; returns the second turn's request body,
    its usage, and the cache state stored after turn 1."""
    async with FakeAnthropic() as fake:
        fake.script_reply(tool_uses=[{"name": "current_time", "input": {}}])
        fake.script_reply("Noted.")
        adapter = MemoryAdapter()
        async with running_bot(fake, db_url, adapter=adapter) as bot:
            # A new private chat: its prior (a follow-up within 5 minutes is likely) writes it for 5 minutes.
            await bot.adapter.say(BIG, user=ALICE)
            chat_pk = await bot.chat_pk("telegram", ALICE.user_id)
            state = CacheState.from_json((await bot.store.active_session(chat_pk)).cache_state)
            if not restart:
                await bot.adapter.say("and what changed since?", user=ALICE, message_id="second")
                request = bot.replies()[-1]
                return request.body, dict(request.usage or {}), state
        async with running_bot(fake, db_url, adapter=MemoryAdapter()) as bot:
            await bot.adapter.say("and what changed since?", user=ALICE, message_id="second")
            request = bot.replies()[-1]
            return request.body, dict(request.usage or {}), state


async def test_a_restart_between_turns_keeps_the_cache_plan(tmp_path: Path) -> None:
    from gateway.store.migrate import upgrade_async

    urls = []
    for name in ("restarted", "continuous"):
        url = f"sqlite+aiosqlite:///{tmp_path / name}.db"
        await upgrade_async(url)
        urls.append(url)
    body_r, usage_r, state = await two_turns(urls[0], restart=True)
    body_c, usage_c, _ = await two_turns(urls[1], restart=False)
    # the tool round carried the first call's entry forward to the end of the turn
    assert [p.ttl for p in state.prefixes] == ["5m"]
    assert len(state.turns) == 1
    assert state.turns[0].calls == 2  # the first call and its tool round: what `another_call` learns from
    assert markers(body_r) == markers(body_c)
    # the follow-up reads that entry and carries it into the hour: its tail is written for an hour, and
    # the read marker before it says 1h too (a one-hour marker never follows a five-minute one)
    assert [m[2] for m in markers(body_r)] == [{"type": "ephemeral", "ttl": "1h"}] * 2
    assert json.dumps(body_r["system"]) == json.dumps(body_c["system"])
    assert usage_r["cache_read_input_tokens"] == usage_c["cache_read_input_tokens"] > 0
