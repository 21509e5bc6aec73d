"""What the outbox needs of the store: the reply parts' states, the clock, and the chat a part goes to.

`Store` satisfies it; a test can hand the outbox anything with these methods.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from gateway.store.deliveries.reply_parts import DeliveryRecord
from gateway.store.records import ChatRecord


class DeliveryStore(Protocol):
    def now(self) -> datetime: ...

    async def get_chat(self, chat_pk: int) -> ChatRecord | None: ...

    async def claim_delivery(self, delivery_id: int, *, stale_before: datetime | None = None) -> bool: ...

    async def delivery_sent(self, delivery_id: int, platform_message_id: str) -> None: ...

    async def delivery_failed(self, delivery_id: int, reason: str, *, lasting: bool) -> None: ...

    async def open_deliveries(self, *, stale_before: datetime) -> list[DeliveryRecord]: ...
