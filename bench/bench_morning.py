"""Morning latency: the first reply after a night's accumulation to ~86% of the context window, with and
without the proactive (idle) compaction job having run overnight.

Run: `python -m bench.bench_morning`. Two private chats are seeded with the same night of history on
Postgres; at 08:00 (simulated) a message arrives in each. In one, the idle-compaction job body ran at
07:30; in the other nothing ran, so the turn's hygiene compacts first and the user waits for the summary.
The fake API's summary call takes SUMMARY_DELAY_S (scaled down from a realistic ~8 s to keep the run
short; the difference between the two cases is that delay plus the compaction's own work). The default
model runs with a planned window of PLANNED_WINDOW tokens, which the night's history fills to ~86%
(the default planned window of a 1M model, 500K, would leave it at a third: no threshold reached).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from agent.llm import AnthropicClient
from bench.databases import DEFAULT_POSTGRES_URL, fresh_postgres
from bench.replay import API_KEY, SimClock, bench_settings, run_idle_scan
from bench.seeding import seed_history
from gateway.app.gateway import Gateway
from gateway.store import Store
from tests.fakes.anthropic import FakeAnthropic
from tests.support.memory_adapter import DirectMemoryAdapter, chat_ref, incoming

SUMMARY_DELAY_S = 3.0
PLANNED_WINDOW = 200_000
NIGHT_MESSAGES = 232
WORDS_PER_MESSAGE = 700


async def _first_reply(
    gateway: Gateway, adapter: DirectMemoryAdapter, clock: SimClock, chat_id: str
) -> float:
    sent = len(adapter.sent)
    started = time.perf_counter()
    await adapter.deliver(
        incoming(
            chat_ref(chat_id, group=False), user_id=f"{chat_id}-u", name="Sam",
            text="good morning, what did we decide last night?", message_id=f"{chat_id}-morning",
            sent_at=clock.utc(),
        )
    )  # fmt: skip
    await gateway.tasks.drain()
    if len(adapter.sent) != sent + 1:
        raise RuntimeError(f"expected one reply in {chat_id}")
    return adapter.sent_at[-1] - started


async def _seed(gateway: Gateway, chat_id: str) -> float:
    """The night's history for one chat; returns its share of the context window."""
    store = gateway.store
    chat = await store.get_or_create_chat("bench", chat_id, None, kind="private", title=None)
    session = await store.active_session(chat.id)
    await seed_history(store, session.id, NIGHT_MESSAGES, keep_active=NIGHT_MESSAGES, words=WORDS_PER_MESSAGE)
    inputs = await store.get_session(session.id)
    return inputs.active_tokens / gateway.model.context_window


async def run(
    *, pg_url: str = DEFAULT_POSTGRES_URL, summary_delay: float = SUMMARY_DELAY_S
) -> dict[str, float]:
    clock = SimClock()
    fake = FakeAnthropic(api_key=API_KEY, clock=lambda: 0.0, summary_delay=summary_delay, keep_bodies=False)
    hour = 3600.0
    async with fake, fresh_postgres(pg_url) as url:
        store = await Store.open(url, clock=clock.utc)
        llm = AnthropicClient(api_key=API_KEY, base_url=fake.base_url)
        adapter = DirectMemoryAdapter()
        gateway = Gateway(
            bench_settings(
                url, fake.base_url, scheduler={"enabled": False}, context={"planned_window": PLANNED_WINDOW}
            ),
            [adapter],
            store=store,
            llm=llm,
        )
        gateway.clock = clock.utc
        try:
            await gateway.start()
            # Night 1 (23:00): the control chat accumulates; nothing runs overnight; 08:00 first message.
            clock.seconds = 23 * hour
            share = await _seed(gateway, "without-job")
            clock.seconds = 32 * hour
            fake.set_time(clock.seconds)
            without = await _first_reply(gateway, adapter, clock, "without-job")
            # Night 2: the same accumulation; the idle-compaction job runs at 07:30; 08:00 first message.
            clock.seconds = 47 * hour
            await _seed(gateway, "with-job")
            compactions = await run_idle_scan(gateway, 55.5 * hour, clock, fake)
            clock.seconds = 56 * hour
            fake.set_time(clock.seconds)
            with_job = await _first_reply(gateway, adapter, clock, "with-job")
        finally:
            await gateway.stop()
            await llm.close()
            await store.close()
    result = {
        "window_share": share,
        "without_job_s": without,
        "with_job_s": with_job,
        "scheduled_compactions": float(compactions),
        "summary_delay_s": summary_delay,
    }
    print(
        f"morning: context at {share:.0%} of the window; first reply without the proactive job "
        f"{without:.2f} s, with it {with_job:.2f} s ({without / with_job:.1f}x faster; summary call "
        f"delay {summary_delay:g} s; {compactions} scheduled compaction(s) overnight)",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--summary-delay", type=float, default=SUMMARY_DELAY_S)
    args = parser.parse_args()
    asyncio.run(run(pg_url=args.postgres_url, summary_delay=args.summary_delay))


if __name__ == "__main__":
    main()
