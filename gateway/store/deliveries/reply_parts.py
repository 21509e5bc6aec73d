"""Reply deliveries: each part of a reply with its state, so a stored reply is sent once, after a crash too.

States: pending (recorded, not sent) -> sending (claimed by one attempt) -> sent (platform message id)
or failed (the reason; never retried). A failed attempt that may be repeated goes back to pending. A
part left in `sending` by a process that died is claimable again once its claim is stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import Table, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.db import StoreBase
from gateway.store.records import StoredMessage
from gateway.store.rows import clean_text, messages, to_message
from gateway.store.tables import Delivery

deliveries = cast(Table, Delivery.__table__)
DeliveryState = Literal["pending", "sending", "sent", "failed"]
ERROR_MAX_CHARS = 500


@dataclass(frozen=True, slots=True)
class NewReply:
    """A turn's reply as it is to be sent: its parts in order, and those already on screen."""

    chat_pk: int
    parts: Sequence[str]
    message_pk: int | None = None
    """The stored assistant message the reply carries (None for an error or notice)."""
    reply_to: str | None = None
    """The platform message the first part answers."""
    sent: dict[int, str] = field(default_factory=dict)
    """Parts already sent while the reply streamed: part index -> platform message id."""


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    id: int
    chat_pk: int
    message_pk: int | None
    part: int
    text: str
    reply_to: str | None
    state: str
    platform_message_id: str | None
    attempts: int
    error: str | None


def _record(row: Any) -> DeliveryRecord:
    return DeliveryRecord(
        id=row.id,
        chat_pk=row.chat_pk,
        message_pk=row.message_pk,
        part=row.part,
        text=row.text,
        reply_to=row.reply_to,
        state=row.state,
        platform_message_id=row.platform_message_id,
        attempts=row.attempts,
        error=row.error,
    )


async def insert_reply(conn: AsyncConnection, reply: NewReply, now: datetime) -> list[DeliveryRecord]:
    """Record every part of `reply` (in the caller's transaction)."""
    records: list[DeliveryRecord] = []
    for index, text in enumerate(reply.parts):
        sent_id = reply.sent.get(index)
        values = {
            "chat_pk": reply.chat_pk,
            "message_pk": reply.message_pk,
            "part": index,
            "text": clean_text(text),
            "reply_to": reply.reply_to if index == 0 else None,
            "state": "pending" if sent_id is None else "sent",
            "platform_message_id": sent_id,
            "attempts": 0 if sent_id is None else 1,
            "error": None,
            "created_at": now,
            "updated_at": now,
        }
        row = (await conn.execute(deliveries.insert().values(**values).returning(deliveries))).one()
        records.append(_record(row))
    return records


class DeliveryMethods(StoreBase):
    """Mixed into `Store`; `StoreBase` provides the transaction, the dialect's insert and the clock."""

    async def claim_delivery(self, delivery_id: int, *, stale_before: datetime | None = None) -> bool:
        """Take a part for one send attempt; False when it is sent, failed or being sent elsewhere."""
        claimable = deliveries.c.state == "pending"
        if stale_before is not None:
            claimable = or_(
                claimable, (deliveries.c.state == "sending") & (deliveries.c.updated_at < stale_before)
            )
        async with self._tx("claim_delivery") as conn:
            result = await conn.execute(
                update(deliveries)
                .where(deliveries.c.id == delivery_id, claimable)
                .values(state="sending", attempts=deliveries.c.attempts + 1, updated_at=self.now())
            )
        return bool(cast(Any, result).rowcount == 1)

    async def delivery_sent(self, delivery_id: int, platform_message_id: str) -> None:
        await self._set_state(delivery_id, "sent", platform_message_id=platform_message_id[:128])

    async def delivery_failed(self, delivery_id: int, reason: str, *, lasting: bool) -> None:
        """A failed attempt: `lasting` ends the part as failed; otherwise it is pending again."""
        await self._set_state(delivery_id, "failed" if lasting else "pending", error=reason[:ERROR_MAX_CHARS])

    async def _set_state(self, delivery_id: int, state: DeliveryState, **values: Any) -> None:
        async with self._tx("delivery_state") as conn:
            await conn.execute(
                update(deliveries)
                .where(deliveries.c.id == delivery_id)
                .values(state=state, updated_at=self.now(), **values)
            )

    async def open_deliveries(self, *, stale_before: datetime) -> list[DeliveryRecord]:
        """Parts not sent yet: pending, or claimed by an attempt before `stale_before` (a dead process)."""
        async with self._tx("open_deliveries") as conn:
            rows = await conn.execute(
                select(deliveries)
                .where(
                    or_(
                        deliveries.c.state == "pending",
                        (deliveries.c.state == "sending") & (deliveries.c.updated_at < stale_before),
                    )
                )
                .order_by(deliveries.c.chat_pk, deliveries.c.id)
            )
            return [_record(r) for r in rows]

    async def reply_for_platform_message(
        self, chat_pk: int, platform_message_id: str
    ) -> StoredMessage | None:
        """The stored reply one of the bot's own platform messages in this chat carries, if any."""
        async with self._tx("reply_for_platform_message") as conn:
            row = (
                await conn.execute(
                    select(messages)
                    .join(deliveries, deliveries.c.message_pk == messages.c.id)
                    .where(
                        deliveries.c.chat_pk == chat_pk,
                        deliveries.c.platform_message_id == platform_message_id,
                        messages.c.chat_pk == chat_pk,
                    )
                    .limit(1)
                )
            ).one_or_none()
        return None if row is None else to_message(row)

    async def delivery_counts(self, chat_pk: int | None = None) -> dict[str, int]:
        """Reply parts by state (one chat, or all chats)."""
        query = select(deliveries.c.state, func.count()).group_by(deliveries.c.state)
        if chat_pk is not None:
            query = query.where(deliveries.c.chat_pk == chat_pk)
        async with self._tx("delivery_counts") as conn:
            return {str(state): int(n) for state, n in await conn.execute(query)}
