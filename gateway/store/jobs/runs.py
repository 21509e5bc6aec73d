"""The fleet's record of its scheduled jobs: one row per job with its last run, result and worker.

Every worker upserts the row after each run it made (a run skipped because another worker held the
job's lock is that worker's run, not ours). `doctor` reads the rows to list each job with its last run
and the next one due; a job whose last successful run (or, if it never succeeded, its first recorded
run) is more than `OVERDUE_INTERVALS` intervals old is reported overdue.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from sqlalchemy import Table, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from gateway.store.db import StoreBase, translate_errors
from gateway.store.tables import JobRun

job_runs = cast(Table, JobRun.__table__)

OVERDUE_INTERVALS = 3
"""A job that has not succeeded for this many of its intervals is reported."""

ERROR_CHARS = 500


@dataclass(frozen=True, slots=True)
class JobRunRecord:
    name: str
    every: timedelta
    first_run_at: datetime
    last_run_at: datetime
    last_ok_at: datetime | None
    last_result: str
    last_error: str | None
    worker: str
    runs: int

    @property
    def next_due(self) -> datetime:
        return self.last_run_at + self.every

    def overdue(self, now: datetime) -> bool:
        """No successful run for `OVERDUE_INTERVALS` intervals (counted from the first run if none)."""
        since = self.last_ok_at or self.first_run_at
        return now - since > self.every * OVERDUE_INTERVALS


class JobRunLog:
    """Upserts and reads the `job_runs` rows (see the module docstring)."""

    def __init__(self, store: StoreBase, *, worker: str) -> None:
        self._store = store
        self._worker = worker[:128]

    async def record(self, name: str, *, every: timedelta, result: str, error: str | None = None) -> None:
        """Record one run of job `name` that ended with `result` ("ok" or "error") now."""
        now = self._store.now()
        ok = result == "ok"
        values = {
            "name": name,
            "every_s": max(1, round(every.total_seconds())),
            "first_run_at": now,
            "last_run_at": now,
            "last_ok_at": now if ok else None,
            "last_result": result,
            "last_error": None if ok else (error or "")[:ERROR_CHARS],
            "worker": self._worker,
            "runs": 1,
        }
        insert = pg_insert if self._store.dialect == "postgresql" else sqlite_insert
        stmt = insert(job_runs).values(**values)
        changes = {
            "every_s": stmt.excluded.every_s,
            "last_run_at": stmt.excluded.last_run_at,
            "last_result": stmt.excluded.last_result,
            "last_error": stmt.excluded.last_error,
            "worker": stmt.excluded.worker,
            "runs": job_runs.c.runs + 1,
        }
        if ok:
            changes["last_ok_at"] = stmt.excluded.last_ok_at
        with translate_errors("record job run"):
            async with self._store.engine.begin() as conn:
                await conn.execute(stmt.on_conflict_do_update(index_elements=["name"], set_=changes))

    async def all(self) -> dict[str, JobRunRecord]:
        with translate_errors("read job runs"):
            async with self._store.engine.connect() as conn:
                rows = (await conn.execute(select(job_runs))).all()
        return {
            row.name: JobRunRecord(
                name=row.name,
                every=timedelta(seconds=row.every_s),
                first_run_at=row.first_run_at,
                last_run_at=row.last_run_at,
                last_ok_at=row.last_ok_at,
                last_result=row.last_result,
                last_error=row.last_error,
                worker=row.worker,
                runs=row.runs,
            )
            for row in rows
        }
