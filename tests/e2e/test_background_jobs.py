"""The background jobs in the real process (`python -m gateway run`), as an operator starts it: the
start-up log lists every job with its next run, and a Telegram group whose unmentioned chatter filled
about 70% of a 20,000-token window (above the proactive share, below hygiene) is compacted by the idle
job once it goes quiet, with nobody writing and nothing answered.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from gateway.store import Store
from tests.e2e.conftest import WorldFactory

GROUP = -100_771
WINDOW = 20_000
SPEAKERS = [(61, "Ines"), (62, "Tomas")]


async def active_tokens(store: Store) -> int:
    async with store.engine.connect() as conn:
        value = (await conn.execute(text("SELECT max(active_tokens) FROM sessions WHERE active"))).scalar()
    return int(value or 0)


async def test_a_quiet_group_above_the_proactive_share_is_compacted_by_the_job(
    telegram_world: WorldFactory, db_url: str
) -> None:
    async with telegram_world(
        context_window=WINDOW,
        GATEWAY_ALLOW_ALL_USERS="true",
        SCHEDULER__ENABLED="true",
        SCHEDULER__IDLE_MINUTES="0.05",  # quiet for 3 s; the idle scan runs as often
    ) as world:
        log = world.gw.log_text()
        for job in ("idle-compaction", "usage-rollup", "cache-keepalive"):
            assert f"job {job}: every " in log
        assert "PAUSED" not in log

        store = await Store.open(db_url)
        try:
            n = 0
            while await active_tokens(store) < int(WINDOW * 0.68):
                for _ in range(5):
                    n += 1
                    user, name = SPEAKERS[n % 2]
                    words = " ".join(f"shift note {n}.{k} about the boiler room" for k in range(12))
                    world.tg.push_message(
                        GROUP, words, user_id=user, first_name=name, chat_type="supergroup", chat_title="Ops"
                    )
                await asyncio.sleep(0.3)
                assert n < 400, "the chatter never filled the window"
            filled = await active_tokens(store)
            assert filled < WINDOW * 0.85  # below hygiene: only the job can compact it

            for _ in range(300):  # the job's scan every 3 s finds it once quiet for 3 s
                async with store.engine.connect() as conn:
                    compactions = (await conn.execute(text("SELECT trigger, outcome FROM compactions"))).all()
                if compactions:
                    break
                await asyncio.sleep(0.1)
            after = await active_tokens(store)
        finally:
            await store.close()

    assert [(c.trigger, c.outcome) for c in compactions] == [("scheduled", "ok")]
    assert after < filled * 0.6
    assert [r.kind for r in world.llm.requests] == ["summary"]
    assert world.replies() == []  # nobody mentioned the bot: nothing was answered
    assert world.sent_to(GROUP) == []
