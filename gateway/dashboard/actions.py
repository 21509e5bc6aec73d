"""The dashboard's two actions, Compact and Undo: the same code as `/compact` and `/compact undo`
(`AdminHandlers.compact_chat`, `undo_compaction`), each written to the audit log with its outcome."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agent.spending.periods import SpendFor
from gateway.commands.admin import AdminHandlers, CompactAnswer
from gateway.errors import GatewayError
from gateway.store.dashboard import DashboardAudit

logger = logging.getLogger(__name__)

_Run = Callable[[int], Awaitable[CompactAnswer]]


@dataclass(frozen=True, slots=True)
class Actions:
    admin: AdminHandlers
    audit: DashboardAudit

    async def compact(self, chat_pk: int, *, client: str) -> CompactAnswer:
        """A manual compaction of the chat, paid from the chat's budget (no user asked)."""
        return await self._run(chat_pk, "compact", client, self._compact)

    async def undo(self, chat_pk: int, *, client: str) -> CompactAnswer:
        return await self._run(chat_pk, "undo", client, self._undo)

    async def _compact(self, chat_pk: int) -> CompactAnswer:
        return await self.admin.compact_chat(chat_pk, SpendFor(chat_pk=chat_pk))

    async def _undo(self, chat_pk: int) -> CompactAnswer:
        return await self.admin.undo_compaction(chat_pk)

    async def _run(self, chat_pk: int, action: str, client: str, run: _Run) -> CompactAnswer:
        try:
            answer = await run(chat_pk)
        except GatewayError as exc:
            logger.warning("dashboard %s of chat %d failed: %s", action, chat_pk, exc)
            answer = CompactAnswer(False, f"{action} failed: {exc}")
            await self.audit.record(chat_pk, action, "failed", answer.text, client=client)
            return answer
        outcome = "ok" if answer.changed else "nothing"
        await self.audit.record(chat_pk, action, outcome, answer.text, client=client)
        logger.info("dashboard %s of chat %d from %s: %s", action, chat_pk, client, outcome)
        return answer
