"""Command receipts: a redelivered command update (same platform message id in the chat) runs once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.tables import CommandReceipt

command_receipts = CommandReceipt.__table__


async def claim(
    conn: AsyncConnection, insert: Any, chat_pk: int, platform_message_id: str, now: datetime
) -> bool:
    """Record the command; True the first time, False when it was handled before."""
    row = (
        await conn.execute(
            insert(command_receipts)
            .values(chat_pk=chat_pk, platform_message_id=platform_message_id[:128], created_at=now)
            .on_conflict_do_nothing()
            .returning(command_receipts.c.id)
        )
    ).one_or_none()
    return row is not None
