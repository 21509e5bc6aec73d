"""Pinned facts of a chat: stored per chat (not per session), listed in pinning order, bounded.

The bounds are checked in the same transaction as the insert (the chat row is locked first), so two
admins pinning at once cannot pass them together. `Store` mixes in `PinMethods`, one transaction each.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Table, delete, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.errors import StoreError
from gateway.store.db import StoreBase
from gateway.store.rows import chats
from gateway.store.tables import Pin

pins = cast(Table, Pin.__table__)


@dataclass(frozen=True, slots=True)
class PinRecord:
    id: int
    text: str
    author_name: str | None
    token_estimate: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class PinLimits:
    max_count: int
    max_tokens: int


class PinLimitError(StoreError):
    """A new pin would pass the chat's bounds; the message says which one and how to make room."""


async def list_pins(conn: AsyncConnection, chat_pk: int) -> list[PinRecord]:
    rows = await conn.execute(
        select(pins.c.id, pins.c.text, pins.c.author_name, pins.c.token_estimate, pins.c.created_at)
        .where(pins.c.chat_pk == chat_pk)
        .order_by(pins.c.id)
    )
    return [PinRecord(*row) for row in rows]


async def add_pin(
    conn: AsyncConnection,
    chat_pk: int,
    *,
    text: str,
    token_estimate: int,
    author_id: str | None,
    author_name: str | None,
    source_message_id: str | None,
    limits: PinLimits,
    now: datetime,
) -> list[PinRecord]:
    """Pin `text`; returns the chat's pins afterwards. Raises `PinLimitError` past a bound."""
    await conn.execute(select(chats.c.id).where(chats.c.id == chat_pk).with_for_update())
    count, tokens = (
        await conn.execute(
            select(func.count(), func.coalesce(func.sum(pins.c.token_estimate), 0)).where(
                pins.c.chat_pk == chat_pk
            )
        )
    ).one()
    if count >= limits.max_count:
        raise PinLimitError(
            f"This chat already has {count} pins (the most it keeps is {limits.max_count}). "
            "Remove one with /unpin N first (/pins lists them)."
        )
    if tokens + token_estimate > limits.max_tokens:
        raise PinLimitError(
            f"That pin is about {token_estimate:,} tokens and the chat's pins already use {tokens:,} of "
            f"{limits.max_tokens:,}. Pin something shorter, or remove a pin with /unpin N."
        )
    await conn.execute(
        pins.insert().values(
            chat_pk=chat_pk,
            text=text,
            author_id=author_id,
            author_name=author_name,
            source_message_id=source_message_id,
            token_estimate=token_estimate,
            created_at=now,
        )
    )
    return await list_pins(conn, chat_pk)


async def remove_pin(conn: AsyncConnection, chat_pk: int, number: int) -> PinRecord | None:
    """Remove the chat's `number`-th pin (1-based, as /pins lists them); None when there is none."""
    current = await list_pins(conn, chat_pk)
    if not 1 <= number <= len(current):
        return None
    pin = current[number - 1]
    await conn.execute(delete(pins).where(pins.c.id == pin.id))
    return pin


async def pin_texts(conn: AsyncConnection, chat_pk: int) -> tuple[str, ...]:
    """What a request carries: the pins' texts in order (bounded by `PinLimits`, so O(1) per turn)."""
    rows = await conn.execute(select(pins.c.text).where(pins.c.chat_pk == chat_pk).order_by(pins.c.id))
    return tuple(row.text for row in rows)


class PinMethods(StoreBase):
    """Mixed into `Store`; `StoreBase` provides the transaction, the dialect's insert and the clock."""

    async def pins(self, chat_pk: int) -> list[PinRecord]:
        async with self._tx("pins") as conn:
            return await list_pins(conn, chat_pk)

    async def add_pin(
        self,
        chat_pk: int,
        text: str,
        *,
        token_estimate: int,
        limits: PinLimits,
        author_id: str | None = None,
        author_name: str | None = None,
        source_message_id: str | None = None,
    ) -> list[PinRecord]:
        """Pin a fact in the chat (raises `PinLimitError` past the bounds); the pins afterwards."""
        async with self._tx("add_pin") as conn:
            return await add_pin(
                conn,
                chat_pk,
                text=text,
                token_estimate=token_estimate,
                author_id=author_id,
                author_name=author_name,
                source_message_id=source_message_id,
                limits=limits,
                now=self.now(),
            )

    async def remove_pin(self, chat_pk: int, number: int) -> PinRecord | None:
        async with self._tx("remove_pin") as conn:
            return await remove_pin(conn, chat_pk, number)
