"""What the admin dashboard reads (`reads`: the overview, the chats, one chat) and its audit log
(`audit`: the `dashboard_actions` table). Plain records out, nothing SQLAlchemy-typed."""

from gateway.store.dashboard.audit import ActionRecord, DashboardAudit
from gateway.store.dashboard.reads import (
    CallPoint,
    ChatRow,
    CompactionEvent,
    DashboardReads,
    MessageLine,
    Overview,
    WorkerLine,
)

__all__ = [
    "ActionRecord",
    "CallPoint",
    "ChatRow",
    "CompactionEvent",
    "DashboardAudit",
    "DashboardReads",
    "MessageLine",
    "Overview",
    "WorkerLine",
]
