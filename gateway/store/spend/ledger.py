"""The spending ledger: reservations held against budget lines before a call, settled after it.

`reserve` holds a call's worst case on every line it counts toward (one row per scope and period, with
its cap) in one transaction, refusing it when a line would pass its cap counting what is spent and what
other calls hold. When what is spent alone leaves no room for the call, the line is marked exhausted
and refuses every call until its period ends; when other calls' holds take the room, only this call
is refused (the holds settle lower). The cap is in the statement's `WHERE`, so workers
reserving at once on Postgres queue on the row lock and each sees the other's hold; rows are locked in
one order (scope, period), so two workers never wait on each other crosswise. SQLite takes its write
lock at `BEGIN` (one worker).

`settle` replaces the hold by the billed cost and reports the lines that just passed the warning share
(each once: `warned_at` is set by whichever call passes it). A reservation still open after
`STALE_AFTER` belongs to a worker that stopped mid-call: `sweep` counts it as spent at its worst case,
since the call may have been billed; a late settlement of a swept hold corrects the line.

On Postgres a hold and a settlement are one statement each (the line rows and the reservation row
together), which keeps the message path to a few round trips.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, TextClause, delete, func, insert, select, text, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agent.spending.periods import Limit
from gateway.store.db import Clock, StoreBase, utc_now
from gateway.store.tables import SpendLine, SpendReservation

ledger = cast(Table, SpendLine.__table__)
reservations = cast(Table, SpendReservation.__table__)

STALE_AFTER = timedelta(minutes=15)
"""Longer than any call may take (its whole time budget, retries included)."""
_EPSILON = 1e-9

LineKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Held:
    """A call's reservation: `amount_usd` held on `lines` until settled or released (no lines: no cap
    applies, nothing is held)."""

    id: int
    amount_usd: float
    lines: tuple[LineKey, ...]


@dataclass(frozen=True, slots=True)
class Refused:
    """The call does not fit: `limit` would pass its cap (`used_usd` is spent plus held). `lasting`: it
    would not fit even with every other call's hold released (the line is exhausted until its period
    ends); otherwise calls in flight hold the room it needs for now."""

    limit: Limit
    used_usd: float
    lasting: bool = True


@dataclass(frozen=True, slots=True)
class LineTotal:
    spent_usd: float
    reserved_usd: float
    exhausted: bool = False
    """A call did not fit the line this period: what is left is less than a call needs."""


class _DoesNotFit(Exception):
    pass


def _key(limit: Limit) -> LineKey:
    return (limit.scope, limit.period)


def _new_line(limit: Limit, now: datetime) -> dict[str, Any]:
    """A budget line's row before anything was spent or held on it."""
    return {
        "scope": limit.scope,
        "period": limit.period,
        "spent_usd": 0.0,
        "reserved_usd": 0.0,
        "cap_usd": limit.cap_usd,
        "updated_at": now,
    }


class SpendLedger(StoreBase):
    """Reads and writes `spend_ledger` and `spend_reservations` (see the module docstring)."""

    def __init__(self, engine: AsyncEngine, *, worker: str, clock: Clock = utc_now) -> None:
        super().__init__(engine, clock=clock)
        self._worker = worker[:128]

    async def reserve(self, limits: Sequence[Limit], amount_usd: float, *, purpose: str) -> Held | Refused:
        """Hold `amount_usd` on every line of `limits`, or refuse without holding anything."""
        limits = sorted(limits, key=_key)
        if not limits:
            return Held(0, amount_usd, ())
        now = self.now()
        too_big = next((limit for limit in limits if amount_usd > limit.cap_usd + _EPSILON), None)
        if too_big is not None:
            return await self._refuse(too_big, now)
        try:
            async with self._tx("reserve spend") as conn:
                hold = self._hold_postgres if self.dialect == "postgresql" else self._hold_each
                reservation_id = await hold(conn, limits, amount_usd, purpose, now)
        except _DoesNotFit:
            return await self._refused(limits, amount_usd, now)
        return Held(reservation_id, amount_usd, tuple(_key(limit) for limit in limits))

    async def settle(
        self, held: Held, cost_usd: float, *, warn: Sequence[Limit] = (), share: float = 0.8
    ) -> list[Limit]:
        """Replace the hold by the billed cost; the lines of `warn` that passed `share` of their cap
        with this call (each line is reported once, by whichever call passes it)."""
        if not held.lines:
            return []
        now = self.now()
        async with self._tx("settle spend") as conn:
            spent = await self._move(conn, held, cost_usd, now)
            due = [
                limit
                for limit in warn
                if _key(limit) in spent and spent[_key(limit)] >= limit.cap_usd * share and share > 0
            ]
            return [limit for limit in due if await self._warn_once(conn, limit, now)]

    async def release(self, held: Held) -> None:
        """Drop the hold: the call was not billed."""
        await self.settle(held, 0.0)

    async def sweep(self, *, older_than: timedelta = STALE_AFTER) -> int:
        """Count reservations left open by a worker that stopped mid-call as spent; returns how many."""
        now = self.now()
        async with self._tx("sweep stale spend") as conn:
            rows = (
                await conn.execute(
                    delete(reservations)
                    .where(reservations.c.created_at < now - older_than)
                    .returning(reservations.c.amount_usd, reservations.c.lines)
                )
            ).all()
            for row in rows:
                for scope, period in sorted((str(s), str(p)) for s, p in row.lines):
                    await conn.execute(
                        update(ledger)
                        .where(ledger.c.scope == scope, ledger.c.period == period)
                        .values(
                            spent_usd=ledger.c.spent_usd + row.amount_usd,
                            reserved_usd=ledger.c.reserved_usd - row.amount_usd,
                            updated_at=now,
                        )
                    )
        return len(rows)

    async def totals(self, keys: Iterable[LineKey]) -> dict[LineKey, LineTotal]:
        """Spent and held on each line asked for (lines never written are absent)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        async with self._tx("read spend") as conn:
            return await self._totals(conn, wanted)

    async def open_reservations(self) -> int:
        async with self._tx("count reservations") as conn:
            return int((await conn.execute(select(func.count()).select_from(reservations))).scalar_one())

    # -- holding -----------------------------------------------------------------------------------------

    async def _hold_postgres(
        self, conn: AsyncConnection, limits: Sequence[Limit], amount: float, purpose: str, now: datetime
    ) -> int:
        """Every line upserted with the hold where it fits and the reservation row, in one statement;
        the reservation is written only when every line took the hold."""
        params: dict[str, Any] = {
            "amount": amount,
            "now": now,
            "n": len(limits),
            "lines": json.dumps([list(_key(limit)) for limit in limits]),
            "purpose": purpose[:32],
            "worker": self._worker,
        }
        for i, limit in enumerate(limits):
            params |= {f"s{i}": limit.scope, f"p{i}": limit.period, f"c{i}": limit.cap_usd}
        reservation_id = (await conn.execute(_postgres_hold(len(limits)), params)).scalar_one_or_none()
        if reservation_id is None:
            raise _DoesNotFit  # rolls back the lines that did take it
        return int(reservation_id)

    async def _hold_each(
        self, conn: AsyncConnection, limits: Sequence[Limit], amount: float, purpose: str, now: datetime
    ) -> int:
        """The same, one statement per line (SQLite: the transaction holds the database's write lock)."""
        for limit in limits:
            stmt = self._insert(ledger).values(**_new_line(limit, now))
            await conn.execute(stmt.on_conflict_do_nothing(index_elements=["scope", "period"]))
            held = await conn.execute(
                update(ledger)
                .where(
                    ledger.c.scope == limit.scope,
                    ledger.c.period == limit.period,
                    ledger.c.exhausted_at.is_(None),
                    ledger.c.spent_usd + ledger.c.reserved_usd + amount <= limit.cap_usd + _EPSILON,
                )
                .values(reserved_usd=ledger.c.reserved_usd + amount, cap_usd=limit.cap_usd, updated_at=now)
                .returning(ledger.c.scope)
            )
            if held.first() is None:
                raise _DoesNotFit
        keys = [list(_key(limit)) for limit in limits]
        row = await conn.execute(
            insert(reservations)
            .values(amount_usd=amount, lines=keys, purpose=purpose[:32], worker=self._worker, created_at=now)
            .returning(reservations.c.id)
        )
        return int(row.scalar_one())

    async def _refused(self, limits: Sequence[Limit], amount: float, now: datetime) -> Refused:
        """Which line did not fit (read after the rollback); marked exhausted only when what is spent
        leaves no room for the call, not when other calls' holds do (they settle below them)."""
        async with self._tx("read spend") as conn:
            totals = await self._totals(conn, [_key(limit) for limit in limits])
        for limit in limits:
            line = totals.get(_key(limit), LineTotal(0.0, 0.0))
            used = line.spent_usd + line.reserved_usd
            if line.exhausted:
                return Refused(limit, used)
            if line.spent_usd + amount > limit.cap_usd + _EPSILON:
                return await self._refuse(limit, now, used=used)
            if used + amount > limit.cap_usd + _EPSILON:
                return Refused(limit, used, lasting=False)
        # Other calls settled in between and made room: refused this once.
        return Refused(limits[0], 0.0, lasting=False)

    async def _refuse(self, limit: Limit, now: datetime, *, used: float = 0.0) -> Refused:
        async with self._tx("mark budget spent") as conn:
            stmt = self._insert(ledger).values(**_new_line(limit, now))
            await conn.execute(stmt.on_conflict_do_nothing(index_elements=["scope", "period"]))
            await conn.execute(
                update(ledger)
                .where(
                    ledger.c.scope == limit.scope,
                    ledger.c.period == limit.period,
                    ledger.c.exhausted_at.is_(None),
                )
                .values(exhausted_at=now)
            )
        return Refused(limit, used)

    # -- settling ----------------------------------------------------------------------------------------

    async def _move(
        self, conn: AsyncConnection, held: Held, cost: float, now: datetime
    ) -> dict[LineKey, float]:
        """Take the reservation row and move its lines from held to spent (a hold the sweep already
        counted as spent is corrected instead); returns each line's spend after it."""
        if self.dialect == "postgresql":
            lines = sorted(held.lines)
            params: dict[str, Any] = {"id": held.id, "cost": cost, "held": held.amount_usd, "now": now}
            for i, (scope, period) in enumerate(lines):
                params |= {f"s{i}": scope, f"p{i}": period}
            rows = (await conn.execute(_postgres_settle(len(lines)), params)).all()
            return {(row.scope, row.period): float(row.spent_usd) for row in rows}
        taken = await conn.execute(
            delete(reservations).where(reservations.c.id == held.id).returning(reservations.c.amount_usd)
        )
        amount = taken.scalar_one_or_none()
        spent_delta = cost if amount is not None else cost - held.amount_usd
        reserved_delta = -float(amount) if amount is not None else 0.0
        spent: dict[LineKey, float] = {}
        for scope, period in sorted(held.lines):  # the order `reserve` locks them in
            row = await conn.execute(
                update(ledger)
                .where(ledger.c.scope == scope, ledger.c.period == period)
                .values(
                    spent_usd=ledger.c.spent_usd + spent_delta,
                    reserved_usd=ledger.c.reserved_usd + reserved_delta,
                    updated_at=now,
                )
                .returning(ledger.c.spent_usd)
            )
            spent[(scope, period)] = float(row.scalar_one())
        return spent

    async def _warn_once(self, conn: AsyncConnection, limit: Limit, now: datetime) -> bool:
        row = await conn.execute(
            update(ledger)
            .where(
                ledger.c.scope == limit.scope, ledger.c.period == limit.period, ledger.c.warned_at.is_(None)
            )
            .values(warned_at=now)
            .returning(ledger.c.scope)
        )
        return row.first() is not None

    async def _totals(self, conn: AsyncConnection, wanted: list[LineKey]) -> dict[LineKey, LineTotal]:
        rows = (
            await conn.execute(
                select(
                    ledger.c.scope,
                    ledger.c.period,
                    ledger.c.spent_usd,
                    ledger.c.reserved_usd,
                    ledger.c.exhausted_at,
                ).where(tuple_(ledger.c.scope, ledger.c.period).in_(wanted))
            )
        ).all()
        return {
            (r.scope, r.period): LineTotal(
                float(r.spent_usd), float(r.reserved_usd), r.exhausted_at is not None
            )
            for r in rows
        }


@functools.cache
def _postgres_hold(lines: int) -> TextClause:
    """The hold of `lines` lines as one statement (text: SQLAlchemy would compile the equivalent
    multi-row upsert with a CTE anew for every call). Only numbered placeholders are formatted in."""
    values = ", ".join(f"(:s{i}, :p{i}, 0, :amount, :c{i}, :now)" for i in range(lines))
    sql = (
        "WITH held AS ("  # noqa: S608 - placeholders only
        " INSERT INTO spend_ledger (scope, period, spent_usd, reserved_usd, cap_usd, updated_at)"
        f" VALUES {values}"
        " ON CONFLICT (scope, period) DO UPDATE SET"
        "  reserved_usd = spend_ledger.reserved_usd + EXCLUDED.reserved_usd,"
        "  cap_usd = EXCLUDED.cap_usd, updated_at = EXCLUDED.updated_at"
        " WHERE spend_ledger.exhausted_at IS NULL AND spend_ledger.spent_usd"
        "  + spend_ledger.reserved_usd + EXCLUDED.reserved_usd <= EXCLUDED.cap_usd + 1e-9"
        " RETURNING 1)"
        " INSERT INTO spend_reservations (amount_usd, lines, purpose, worker, created_at)"
        " SELECT :amount, CAST(:lines AS JSON), :purpose, :worker, :now"
        " WHERE (SELECT count(*) FROM held) = :n"
        " RETURNING id"
    )
    return text(sql)


@functools.cache
def _postgres_settle(lines: int) -> TextClause:
    """The settlement of `lines` lines as one statement: the reservation row taken, each line moved
    from held to spent in the order holds lock them (an upsert takes its rows in the order given; the
    lines exist, so it only ever updates). Only numbered placeholders are formatted in."""
    values = ", ".join(f"(CAST(:s{i} AS VARCHAR), CAST(:p{i} AS VARCHAR), {i})" for i in range(lines))
    sql = (
        "WITH taken AS (DELETE FROM spend_reservations WHERE id = :id RETURNING amount_usd)"  # noqa: S608
        " INSERT INTO spend_ledger (scope, period, spent_usd, reserved_usd, cap_usd, updated_at)"
        " SELECT v.scope, v.period,"
        "  CAST(:cost AS DOUBLE PRECISION)"
        "   - CASE WHEN EXISTS (SELECT 1 FROM taken) THEN 0.0 ELSE CAST(:held AS DOUBLE PRECISION) END,"
        "  -COALESCE((SELECT amount_usd FROM taken), 0.0), 0.0, CAST(:now AS TIMESTAMPTZ)"
        f" FROM (VALUES {values}) AS v(scope, period, position) ORDER BY v.position"
        " ON CONFLICT (scope, period) DO UPDATE SET"
        "  spent_usd = spend_ledger.spent_usd + EXCLUDED.spent_usd,"
        "  reserved_usd = spend_ledger.reserved_usd + EXCLUDED.reserved_usd,"
        "  updated_at = EXCLUDED.updated_at"
        " RETURNING scope, period, spent_usd"
    )
    return text(sql)
