"""The spending ledger: reservations held against budget lines before a call, settled after it.

`reserve` holds a call's worst case on every line it counts toward in one transaction, refusing it when a
capped line would pass its cap counting what is spent and what other calls hold; the line that refused it
is marked exhausted (what is left of it is less than a call needs) until its period ends. Each line is a
row updated with its cap in the `WHERE` clause, locked in a fixed order, so workers reserving at once on
Postgres queue on the row and each sees the other's hold; SQLite takes its write lock at `BEGIN` (one
worker). `settle` replaces the hold by the billed cost and reports the lines that just passed the warning
share (each once: its `warned_at` is set in the same statement). A reservation still open after
`STALE_AFTER` belongs to a worker that died mid-call: `sweep` counts it as spent at its worst case, since
the call may have been billed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, delete, insert, select, tuple_, update
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
    """A call's reservation: `amount_usd` held on `lines` until settled or released."""

    id: int
    amount_usd: float
    lines: tuple[LineKey, ...]


@dataclass(frozen=True, slots=True)
class Refused:
    """The call does not fit: `limit` would pass its cap (`used_usd` is spent plus held)."""

    limit: Limit
    used_usd: float


@dataclass(frozen=True, slots=True)
class LineTotal:
    spent_usd: float
    reserved_usd: float
    exhausted: bool = False
    """A call did not fit the line this period: what is left is less than a call needs."""


class _DoesNotFit(Exception):
    def __init__(self, refused: Refused) -> None:
        self.refused = refused


class SpendLedger(StoreBase):
    """Reads and writes `spend_ledger` and `spend_reservations` (see the module docstring)."""

    def __init__(self, engine: AsyncEngine, *, worker: str, clock: Clock = utc_now) -> None:
        super().__init__(engine, clock=clock)
        self._worker = worker[:128]

    async def reserve(self, limits: Sequence[Limit], amount_usd: float, *, purpose: str) -> Held | Refused:
        """Hold `amount_usd` on every line of `limits`, or refuse without holding anything."""
        now = self.now()
        try:
            async with self._tx("reserve spend") as conn:
                for limit in limits:
                    await self._ensure_line(conn, limit, now)
                for limit in limits:
                    await self._hold(conn, limit, amount_usd, now)
                keys = [[limit.scope, limit.period] for limit in limits]
                row = await conn.execute(
                    insert(reservations)
                    .values(
                        amount_usd=amount_usd,
                        lines=keys,
                        purpose=purpose[:32],
                        worker=self._worker,
                        created_at=now,
                    )
                    .returning(reservations.c.id)
                )
                reservation_id = int(row.scalar_one())
        except _DoesNotFit as exc:
            await self._exhaust(exc.refused.limit, now)
            return exc.refused
        return Held(reservation_id, amount_usd, tuple((limit.scope, limit.period) for limit in limits))

    async def settle(
        self, held: Held, cost_usd: float, *, warn: Sequence[Limit] = (), share: float = 0.8
    ) -> list[Limit]:
        """Replace the hold by the billed cost; the capped lines of `warn` that passed `share` of their
        cap with this call (each line is reported once, by whichever call passes it)."""
        now = self.now()
        async with self._tx("settle spend") as conn:
            amount = await self._take(conn, held.id)
            if amount is None:  # swept as stale: its worst case already counts as spent
                await self._move(conn, held.lines, spent=cost_usd - held.amount_usd, reserved=0.0, now=now)
            else:
                await self._move(conn, held.lines, spent=cost_usd, reserved=-amount, now=now)
            return [limit for limit in warn if await self._passed(conn, limit, share, now)]

    async def release(self, held: Held) -> None:
        """Drop the hold: the call was not billed."""
        now = self.now()
        async with self._tx("release spend") as conn:
            amount = await self._take(conn, held.id)
            if amount is None:  # swept as stale: undo what the sweep counted
                await self._move(conn, held.lines, spent=-held.amount_usd, reserved=0.0, now=now)
            else:
                await self._move(conn, held.lines, spent=0.0, reserved=-amount, now=now)

    async def sweep(self, *, older_than: timedelta = STALE_AFTER) -> int:
        """Count reservations left open by a worker that died mid-call as spent; returns how many."""
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
                lines = tuple((str(scope), str(period)) for scope, period in row.lines)
                await self._move(conn, lines, spent=row.amount_usd, reserved=-row.amount_usd, now=now)
        return len(rows)

    async def totals(self, keys: Iterable[LineKey]) -> dict[LineKey, LineTotal]:
        """Spent and held on each line asked for (lines never written are absent)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        async with self._tx("read spend") as conn:
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

    async def open_reservations(self) -> int:
        async with self._tx("count reservations") as conn:
            rows = (await conn.execute(select(reservations.c.id))).all()
        return len(rows)

    # -- statements ------------------------------------------------------------------------------------

    async def _ensure_line(self, conn: AsyncConnection, limit: Limit, now: datetime) -> None:
        values: dict[str, Any] = {
            "scope": limit.scope,
            "period": limit.period,
            "spent_usd": 0.0,
            "reserved_usd": 0.0,
            "updated_at": now,
        }
        stmt = self._insert(ledger).values(**values)
        await conn.execute(stmt.on_conflict_do_nothing(index_elements=["scope", "period"]))

    async def _hold(self, conn: AsyncConnection, limit: Limit, amount: float, now: datetime) -> None:
        where = [ledger.c.scope == limit.scope, ledger.c.period == limit.period]
        if limit.capped:
            where.append(ledger.c.spent_usd + ledger.c.reserved_usd + amount <= limit.cap_usd + _EPSILON)
        held = await conn.execute(
            update(ledger)
            .where(*where)
            .values(reserved_usd=ledger.c.reserved_usd + amount, updated_at=now)
            .returning(ledger.c.scope)
        )
        if held.first() is not None:
            return
        used = (
            await conn.execute(
                select(ledger.c.spent_usd + ledger.c.reserved_usd).where(
                    ledger.c.scope == limit.scope, ledger.c.period == limit.period
                )
            )
        ).scalar_one()
        raise _DoesNotFit(Refused(limit, float(used)))

    async def _exhaust(self, limit: Limit, now: datetime) -> None:
        async with self._tx("mark budget spent") as conn:
            await self._ensure_line(conn, limit, now)  # the refused hold's transaction left nothing
            await conn.execute(
                update(ledger)
                .where(
                    ledger.c.scope == limit.scope,
                    ledger.c.period == limit.period,
                    ledger.c.exhausted_at.is_(None),
                )
                .values(exhausted_at=now)
            )

    async def _take(self, conn: AsyncConnection, reservation_id: int) -> float | None:
        row = await conn.execute(
            delete(reservations)
            .where(reservations.c.id == reservation_id)
            .returning(reservations.c.amount_usd)
        )
        amount = row.scalar_one_or_none()
        return float(amount) if amount is not None else None

    async def _move(
        self, conn: AsyncConnection, lines: Sequence[LineKey], *, spent: float, reserved: float, now: datetime
    ) -> None:
        for scope, period in sorted(lines):  # the order `reserve` locks them in
            await conn.execute(
                update(ledger)
                .where(ledger.c.scope == scope, ledger.c.period == period)
                .values(
                    spent_usd=ledger.c.spent_usd + spent,
                    reserved_usd=ledger.c.reserved_usd + reserved,
                    updated_at=now,
                )
            )

    async def _passed(self, conn: AsyncConnection, limit: Limit, share: float, now: datetime) -> bool:
        if not limit.capped or share <= 0:
            return False
        row = await conn.execute(
            update(ledger)
            .where(
                ledger.c.scope == limit.scope,
                ledger.c.period == limit.period,
                ledger.c.warned_at.is_(None),
                ledger.c.spent_usd >= limit.cap_usd * share,
            )
            .values(warned_at=now)
            .returning(ledger.c.scope)
        )
        return row.first() is not None
