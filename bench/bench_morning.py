"""Morning latency: the first reply after a night's accumulation to ~86% of the context window, with and
without the proactive (idle) compaction job having run overnight.

Run: `python -m bench.bench_morning`. Two private chats, each in a gateway of its own on a fresh Postgres
database, are seeded with the same night of history at 23:00 (simulated); at 08:00 a message arrives.
Without the job (`scheduler.enabled: false`) nothing runs overnight, so the turn's hygiene compacts first
and the user waits for the summary. With it, the gateway is started as production starts it
(`scheduler.enabled: true`): its own scheduler runs the idle-compaction job at the job's interval on the
wall clock. The job's body reads the gateway's clock, which is the simulated one, so the benchmark moves
that clock to 07:30 and waits (with a deadline) until the `compactions` table shows the job's scheduled
compaction, then sends the 08:00 message. `scheduler.idle_minutes` is IDLE_MINUTES in both gateways, which
makes the job's interval (`job_intervals`: the smaller of 5 minutes and the idle time) a few seconds of
wall time; it is the only setting the idle time changes.

The fake API's summary call takes SUMMARY_DELAY_S (scaled down from a realistic ~8 s to keep the run
short; the difference between the two cases is that delay plus the compaction's own work). The default
model runs with a planned window of PLANNED_WINDOW tokens, which the night's history fills to ~86%
(the default planned window of a 1M model, 500K, would leave it at a third: no threshold reached).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass

from sqlalchemy import text

from agent.llm import AnthropicClient
from bench.databases import DEFAULT_POSTGRES_URL, fresh_postgres
from bench.replay import API_KEY, SimClock, bench_settings
from bench.seeding import seed_history
from gateway.app.gateway import Gateway
from gateway.store import Store
from gateway.store.jobs.runs import JobRunLog
from tests.fakes.anthropic import FakeAnthropic
from tests.support.memory_adapter import DirectMemoryAdapter, chat_ref, incoming

SUMMARY_DELAY_S = 3.0
PLANNED_WINDOW = 200_000
NIGHT_MESSAGES = 232
WORDS_PER_MESSAGE = 700
IDLE_MINUTES = 0.05
"""3 s: the scheduler's idle-compaction job then runs every 3 s of wall time."""
JOB_DEADLINE_S = 60.0
"""How long the benchmark waits for the scheduler's compaction before it gives up."""
HOUR = 3600.0
NIGHT = 23 * HOUR
JOB_LOOKS = 31.5 * HOUR
"""07:30 the next morning: the simulated time the scheduler's job runs at."""
MORNING = 32 * HOUR


@dataclass(frozen=True, slots=True)
class Morning:
    """One chat's morning: its share of the window, the first reply's latency, and the job's part."""

    share: float
    first_reply_s: float
    scheduled: int = 0
    """Scheduled compactions the `compactions` table shows before the morning message."""
    job_wait_s: float = 0.0
    """Wall time from the move to 07:30 until the scheduler's run that compacted was recorded."""
    job_runs: int = 0
    """Runs of the idle-compaction job the scheduler recorded (`job_runs`) by then."""


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


async def _scheduled_compactions(store: Store) -> int:
    async with store.engine.connect() as conn:
        query = text("SELECT count(*) FROM compactions WHERE trigger = 'scheduled' AND outcome = 'ok'")
        return int((await conn.execute(query)).scalar_one())


async def _wait_for_the_job(gateway: Gateway, clock: SimClock, deadline_s: float) -> tuple[float, int]:
    """Wait until the scheduler's idle-compaction job has compacted and recorded that run (a run at the
    simulated 07:30: the clock stays there); returns the wall time waited and the job's runs recorded in
    `job_runs`."""
    started = time.perf_counter()
    log = JobRunLog(gateway.store, worker="bench")
    while True:
        if await _scheduled_compactions(gateway.store):
            idle = (await log.all()).get("idle-compaction")
            if idle is not None and idle.last_ok_at is not None and idle.last_ok_at >= clock.utc():
                return time.perf_counter() - started, idle.runs
        if time.perf_counter() - started > deadline_s:
            raise RuntimeError(f"the scheduler's idle-compaction job compacted nothing in {deadline_s:g} s")
        await asyncio.sleep(0.05)


async def _morning(
    fake: FakeAnthropic, pg_url: str, chat_id: str, *, job: bool, deadline_s: float = JOB_DEADLINE_S
) -> Morning:
    """One gateway on a fresh database: the night at 23:00, the job's part (scheduler on) or nothing
    (scheduler off), the first message at 08:00."""
    clock = SimClock()
    async with fresh_postgres(pg_url) as url:
        store = await Store.open(url, clock=clock.utc)
        llm = AnthropicClient(api_key=API_KEY, base_url=fake.base_url)
        adapter = DirectMemoryAdapter()
        settings = bench_settings(
            url,
            fake.base_url,
            scheduler={"enabled": job, "idle_minutes": IDLE_MINUTES},
            context={"planned_window": PLANNED_WINDOW},
        )
        gateway = Gateway(settings, [adapter], store=store, llm=llm)
        gateway.clock = clock.utc  # the scheduler's jobs read it too
        try:
            clock.seconds = NIGHT
            fake.set_time(clock.seconds)
            await gateway.start()
            if job and gateway.scheduler is None:
                raise RuntimeError("the gateway started no scheduler")
            share = await _seed(gateway, chat_id)
            waited, runs = 0.0, 0
            if job:
                clock.seconds = JOB_LOOKS
                fake.set_time(clock.seconds)
                waited, runs = await _wait_for_the_job(gateway, clock, deadline_s)
            scheduled = await _scheduled_compactions(store)
            clock.seconds = MORNING
            fake.set_time(clock.seconds)
            first = await _first_reply(gateway, adapter, clock, chat_id)
        finally:
            await gateway.stop()
            await llm.close()
            await store.close()
    return Morning(share, first, scheduled, waited, runs)


async def run(
    *, pg_url: str = DEFAULT_POSTGRES_URL, summary_delay: float = SUMMARY_DELAY_S
) -> dict[str, float]:
    fake = FakeAnthropic(api_key=API_KEY, clock=lambda: 0.0, summary_delay=summary_delay, keep_bodies=False)
    async with fake:
        without = await _morning(fake, pg_url, "without-job", job=False)
        with_job = await _morning(fake, pg_url, "with-job", job=True)
    if without.scheduled:
        raise RuntimeError("a scheduled compaction ran in the gateway without the scheduler")
    result = {
        "window_share": without.share,
        "without_job_s": without.first_reply_s,
        "with_job_s": with_job.first_reply_s,
        "scheduled_compactions": float(with_job.scheduled),
        "job_wait_s": with_job.job_wait_s,
        "job_runs": float(with_job.job_runs),
        "summary_delay_s": summary_delay,
    }
    print(
        f"morning: context at {without.share:.0%} of the window; first reply without the proactive job "
        f"{without.first_reply_s:.2f} s, with it {with_job.first_reply_s:.2f} s "
        f"({without.first_reply_s / with_job.first_reply_s:.1f}x faster; summary call delay "
        f"{summary_delay:g} s); with the scheduler on, {with_job.scheduled} scheduled compaction(s) "
        f"{with_job.job_wait_s:.1f} s after 07:30 (wall time; idle-compaction runs recorded: "
        f"{with_job.job_runs})",
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
