"""The second look at reply parts left open before a restart: a failed pass is counted, not only logged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from gateway.errors import StoreError
from gateway.metrics import Metrics
from gateway.platforms.router import Platforms
from gateway.reply import outbox as delivery
from gateway.reply.outbox import RESUME_JOB, Outbox
from gateway.store import DeliveryRecord, Store
from tests.support.memory_adapter import MemoryAdapter


class FlakyStore:
    """Open parts: none at start-up, then the database fails."""

    def __init__(self) -> None:
        self.calls = 0

    def now(self) -> datetime:
        return datetime(2026, 11, 24, tzinfo=UTC)

    async def open_deliveries(self, *, stale_before: datetime) -> list[DeliveryRecord]:
        self.calls += 1
        if self.calls > 1:
            raise StoreError("database unavailable")
        return []


async def test_a_failed_second_pass_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delivery, "STALE_CLAIM", timedelta(0))
    metrics = Metrics()
    store = FlakyStore()
    adapter = MemoryAdapter()
    outbox = Outbox(store=cast(Store, store), platforms=Platforms([adapter]), metrics=metrics)

    assert await outbox.resume() == 0
    task = outbox._resume_task
    assert task is not None
    await task  # the failure is logged and counted, not raised out of the background task

    assert store.calls == 2
    assert adapter.sent == []  # nothing is open, nothing is sent
    runs: Any = metrics.job_runs.labels(job=RESUME_JOB, result="error")
    assert runs._value.get() == 1
    await outbox.stop()
