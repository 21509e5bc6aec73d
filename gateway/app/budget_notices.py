"""Who hears when a budget passes its warning share (once per budget and period): the chat, for its
own budgets; the admins, in their private chats with the bot on Telegram, for the bot's and a user's.
Every warning is also logged by the budget."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from agent.spending.periods import Limit, SpendFor
from gateway.errors import SendError
from gateway.intake.recovery import chat_ref
from gateway.platforms.base import ChatKind, ChatRef, OutgoingMessage
from gateway.platforms.router import Platforms
from gateway.reply.wording import budget_warning
from gateway.store import Store

logger = logging.getLogger(__name__)


class BudgetNotices:
    def __init__(
        self, store: Store, platforms: Platforms, *, telegram_admins: Iterable[str], share: float
    ) -> None:
        self.store = store
        self.platforms = platforms
        self.telegram_admins = sorted(telegram_admins)
        self.share = share

    async def __call__(self, limit: Limit, who: SpendFor) -> None:
        targets = await self._targets(limit, who)
        # the admins read it elsewhere: a user's budget is named by its user
        name = limit.name.replace("your ", f"{who.user}'s ") if limit.kind == "user" else limit.name
        text = budget_warning(name, limit.cap_usd, self.share)
        for chat in targets:
            try:
                await self.platforms.send(OutgoingMessage(chat=chat, text=text))
            except SendError as exc:
                logger.error("budget warning to %s:%s not delivered: %s", chat.platform, chat.chat_id, exc)
        if not targets:
            logger.warning("budget warning with nobody to tell (no Telegram admin configured): %s", text)

    async def _targets(self, limit: Limit, who: SpendFor) -> list[ChatRef]:
        if limit.kind == "chat" and who.chat_pk is not None:
            chat = await self.store.get_chat(who.chat_pk)
            return [chat_ref(chat)] if chat is not None and self.platforms.has(chat.platform) else []
        if not self.platforms.has("telegram"):
            return []
        return [ChatRef("telegram", admin, kind=ChatKind.PRIVATE) for admin in self.telegram_admins]
