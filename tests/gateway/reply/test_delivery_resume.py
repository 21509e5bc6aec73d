"""The second look at reply parts left open before a restart: a failed pass is counted, not only logged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from gateway.errors import StoreError
from gateway.metrics import Metrics
from gateway.platforms.base import OutgoingMessage, SentMessage
from gateway.reply import outbox as delivery
from gateway.reply.outbox import RESUME_JOB, Outbox
from gateway.store import DeliveryRecord, Store


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


async def never_send(message: OutgoingMessage) -> SentMessage:
    raise AssertionError("nothing is open, nothing is sent")


async def test_a_failed_second_pass_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delivery, "STALE_CLAIM", timedelta(0))
    metrics = Metrics()
    store = FlakyStore()
    outbox = Outbox(store=cast(Store, store), send=never_send, metrics=metrics)

    assert await outbox.resume() == 0
    task = outbox._resume_task
    assert task is not None
    await task  # the failure is logged and counted, not raised out of the background task

    assert store.calls == 2
    runs: Any = metrics.job_runs.labels(job=RESUME_JOB, result="error")
    assert runs._value.get() == 1
    await outbox.stop()
