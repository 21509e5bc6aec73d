"""The dashboard's audit log: every action taken from it, one row each, newest first on the chat page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Table, insert, select

from gateway.store.db import StoreBase
from gateway.store.tables import DashboardAction

actions = cast(Table, DashboardAction.__table__)


@dataclass(frozen=True, slots=True)
class ActionRecord:
    chat_pk: int
    action: str
    outcome: str
    detail: str
    client: str
    created_at: datetime


class DashboardAudit(StoreBase):
    async def record(self, chat_pk: int, action: str, outcome: str, detail: str, *, client: str) -> None:
        async with self._tx("dashboard_action") as conn:
            await conn.execute(
                insert(actions).values(
                    chat_pk=chat_pk,
                    action=action[:16],
                    outcome=outcome[:16],
                    detail=detail,
                    client=client[:64],
                    created_at=self.now(),
                )
            )

    async def for_chat(self, chat_pk: int, *, limit: int = 50) -> list[ActionRecord]:
        query = (
            select(actions)
            .where(actions.c.chat_pk == chat_pk)
            .order_by(actions.c.created_at.desc(), actions.c.id.desc())
            .limit(limit)
        )
        async with self._tx("dashboard_actions") as conn:
            rows = (await conn.execute(query)).all()
        return [ActionRecord(r.chat_pk, r.action, r.outcome, r.detail, r.client, r.created_at) for r in rows]
