"""Storage: SQLAlchemy models, the session repository (the only code that writes SQL), per-chat locks.

Callers use `Store` and the plain records in `gateway.store.records`; nothing SQLAlchemy-typed leaves
this package. A consumer that needs one part of the store types it against that part's protocol
(`DeliveryStore`, `ReportStore`). The core modules sit here (`repository`: `Store`; `db`: engine,
errors, `StoreBase`; `tables`; `records`; `rows`; `migrate`), each part of the store in its folder:
`messages/`, `pins/`, `compaction/`, `cache/`, `deliveries/`, `reports/`, `jobs/`, `locks/`, `search/`.
"""

from gateway.store.deliveries.protocol import DeliveryStore
from gateway.store.deliveries.reply_parts import DeliveryRecord, NewReply
from gateway.store.locks.chat_lock import ChatLocks
from gateway.store.pins.chat_pins import PinLimitError, PinLimits, PinRecord
from gateway.store.records import (
    AppendResult,
    BusyChat,
    CallRecord,
    ChatRecord,
    ChatStats,
    CompactionApply,
    CompactionRecord,
    GlobalStats,
    NewMessage,
    NewSummary,
    PromptPins,
    Role,
    SessionRecord,
    StoredMessage,
    TurnSnapshot,
    UsageTotals,
)
from gateway.store.reports.protocol import ReportStore
from gateway.store.repository import Store

__all__ = [
    "AppendResult",
    "BusyChat",
    "CallRecord",
    "ChatLocks",
    "ChatRecord",
    "ChatStats",
    "CompactionApply",
    "CompactionRecord",
    "DeliveryRecord",
    "DeliveryStore",
    "GlobalStats",
    "NewMessage",
    "NewReply",
    "NewSummary",
    "PinLimitError",
    "PinLimits",
    "PinRecord",
    "PromptPins",
    "ReportStore",
    "Role",
    "SessionRecord",
    "Store",
    "StoredMessage",
    "TurnSnapshot",
    "UsageTotals",
]
