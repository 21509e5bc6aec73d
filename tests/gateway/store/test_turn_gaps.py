"""Chat gaps are recorded per turn: tool rounds inside a turn add no gap to `sessions.cache_gaps`."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from gateway.store import Store

from .helpers import new_chat
from .test_usage_stats import Clock, clocked, reply

__all__ = ["clocked"]


async def test_only_a_turns_first_call_records_a_gap(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    chat, session = await new_chat(store)
    for _turn in range(3):
        await store.record_call(session, chat, reply())
        for _round in range(2):  # two tool rounds, seconds apart
            clock.now += timedelta(seconds=4)
            await store.record_call(session, chat, dataclasses.replace(reply(), opens_turn=False))
        clock.now += timedelta(minutes=20)
    record = await store.get_session(session)
    # Each turn starts 20 minutes after the previous turn's last call; the 4 s rounds are not gaps.
    assert record.cache_gaps == [1_200.0, 1_200.0]
    assert record.last_call_at == clock.now - timedelta(minutes=20)
