"""The real `Gateway` on the real scheduler, no first run given: every job runs on its own, is recorded
for the fleet and counted in the metrics, and a quiet group above the proactive share is compacted by
the idle job with nobody writing."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from gateway.jobs import maintenance
from gateway.store.jobs.runs import JobRunLog
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import Bot, running_bot
from tests.support.memory_adapter import ALICE, BOB, group_chat

TICK = timedelta(seconds=0.4)
JOBS = {
    "idle-compaction",
    "usage-rollup",
    "spend-sweep",
    "archive-retention",
    "cache-keepalive",
    "budget-reset",
    "reminders",
}


@pytest.fixture
def short_intervals(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "IDLE_SCAN_EVERY",
        "ROLLUP_EVERY",
        "RETENTION_EVERY",
        "KEEPALIVE_SCAN_EVERY",
        "SPEND_SWEEP_EVERY",
        "BUDGET_RESET_EVERY",
    ):
        monkeypatch.setattr(maintenance, name, TICK)


async def wait_for_runs(bot: Bot, names: set[str], *, timeout_s: float = 20.0) -> dict[str, int]:
    log = JobRunLog(bot.store, worker="test")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        runs = await log.all()
        done = {name: run.runs for name, run in runs.items() if run.last_ok_at is not None}
        if names <= set(done) or loop.time() > deadline:
            return done
        await asyncio.sleep(0.1)


@pytest.mark.usefixtures("short_intervals")
async def test_every_job_runs_on_its_own_and_a_quiet_group_is_compacted(db_url: str) -> None:
    group = group_chat("-700", "Night shift")
    settings = {
        "scheduler": {"enabled": True, "idle_minutes": 0.01, "archive_retention_days": 30},
        "reminders": {"enabled": True},
        "limits": {"answer_after_reset": True},
        "context": {"planned_window": 20_000},
        "gateway_allow_all_users": True,
    }
    async with FakeAnthropic() as fake_api, running_bot(fake_api, db_url, **settings) as bot:
        assert bot.gateway.scheduler is not None
        assert {job.name for job in bot.gateway.scheduler.jobs()} == JOBS
        assert all(job.next_run is not None for job in bot.gateway.scheduler.jobs())
        # Unmentioned chatter to about 70% of the window: stored, never answered, then silence.
        for i in range(40):
            user = ALICE if i % 2 else BOB
            await bot.adapter.post(f"chatter {i}: " + "the night shift log says " * 60, user=user, chat=group)
        await bot.adapter.wait_idle()
        runs = await wait_for_runs(bot, JOBS)
        assert set(runs) == JOBS, runs
        for _ in range(300):  # the compaction is stored after its summary request: wait for the record
            compactions = await bot.rows("SELECT trigger, outcome FROM compactions")
            if compactions:
                break
            await asyncio.sleep(0.1)
        window = await bot.window("telegram", "-700")
        metrics = bot.gateway.metrics
        counted = {job: metrics.job_runs.labels(job=job, result="ok")._value.get() for job in JOBS}

    assert bot.replies() == []  # nobody asked: the bot never answered
    assert [(c.trigger, c.outcome) for c in compactions] == [("scheduled", "ok")]
    assert [r.kind for r in fake_api.requests].count("summary") == 1
    assert [m.state for m in window].count("summary") == 1
    assert len(window) < 40
    assert all(count >= 1 for count in counted.values()), counted
