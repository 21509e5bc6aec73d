"""The scheduler: one run of a job at a time across workers, and failures logged without stopping it."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest

from gateway.jobs.scheduler import JobScheduler, JobSpec
from gateway.store import Store
from gateway.store.job_lock import JobLocks


async def test_two_workers_racing_for_one_job_run_it_once(pg_url: str) -> None:
    worker_a, worker_b = await Store.open(pg_url), await Store.open(pg_url)
    runs: list[str] = []
    release = asyncio.Event()
    inside = asyncio.Event()

    def body(worker: str):
        async def run() -> None:
            runs.append(worker)
            inside.set()
            await release.wait()

        return run

    sched_a = JobScheduler(JobLocks(worker_a))
    sched_b = JobScheduler(JobLocks(worker_b))
    sched_a.add(JobSpec("rollup", body("a"), timedelta(hours=1)))
    sched_b.add(JobSpec("rollup", body("b"), timedelta(hours=1)))
    try:
        first = asyncio.create_task(sched_a.run("rollup"))
        await asyncio.wait_for(inside.wait(), 5)
        assert await sched_b.run("rollup") is False  # worker b finds the job taken and skips
        release.set()
        assert await first is True
        assert runs == ["a"]
        # Once the run ended, the lock is free again for any worker.
        assert await sched_b.run("rollup") is True
        assert runs == ["a", "b"]
    finally:
        await worker_a.close()
        await worker_b.close()


async def test_concurrent_runs_in_one_process_are_serialised(sqlite_url: str) -> None:
    store = await Store.open(sqlite_url)
    results: list[str] = []
    sched = JobScheduler(JobLocks(store), observe=lambda name, result: results.append(result))
    gate = asyncio.Event()

    async def slow() -> None:
        await gate.wait()

    sched.add(JobSpec("slow", slow, timedelta(hours=1)))
    try:
        running = asyncio.create_task(sched.run("slow"))
        await asyncio.sleep(0.05)
        assert await sched.run("slow") is False
        gate.set()
        assert await running is True
        assert results == ["skipped", "ok"]
    finally:
        await store.close()


async def test_a_failing_job_is_logged_and_the_scheduler_keeps_going(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = await Store.open(sqlite_url)
    results: list[tuple[str, str]] = []
    sched = JobScheduler(JobLocks(store), observe=lambda name, result: results.append((name, result)))
    healthy_runs = 0
    two_runs = asyncio.Event()

    async def broken() -> None:
        raise RuntimeError("summary backend exploded")

    async def healthy() -> None:
        nonlocal healthy_runs
        healthy_runs += 1
        if healthy_runs >= 2:
            two_runs.set()

    start = datetime.now(UTC)
    sched.add(JobSpec("broken", broken, timedelta(seconds=0.2), first_run=start))
    sched.add(JobSpec("healthy", healthy, timedelta(seconds=0.2), first_run=start))
    caplog.set_level(logging.ERROR, logger="gateway.jobs.scheduler")
    sched.start()
    try:
        await asyncio.wait_for(two_runs.wait(), 5)
        await asyncio.sleep(0.3)
    finally:
        await sched.stop()
        await store.close()
    failures = [
        r for r in caplog.records if r.name == "gateway.jobs.scheduler" and "job broken failed" in r.message
    ]
    assert failures, caplog.text
    assert "summary backend exploded" in failures[0].getMessage()
    assert failures[0].exc_info is not None
    assert results.count(("broken", "error")) >= 2  # it failed, and ran again on schedule
    assert ("healthy", "ok") in results
