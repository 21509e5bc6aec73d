"""A command from an allowed user: checked (known, allowed, its arguments), run once, answered.

Each handled command leaves a receipt (chat, platform message id), so a redelivered update does not
run it twice. Commands are not spooled: while the database is down the sender is asked to retry.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from gateway.commands import menu as commands
from gateway.commands.menu import CommandContext
from gateway.errors import DatabaseUnavailableError, GatewayError
from gateway.intake.auth import Authorizer
from gateway.platforms.base import ChatKind, IncomingMessage
from gateway.reply.wording import COMMAND_STORAGE_DOWN, bad_command_args, command_failed
from gateway.store import Store

logger = logging.getLogger(__name__)

CommandHandler = Callable[[CommandContext], Awaitable[str]]
ReplyFn = Callable[[IncomingMessage, str], Awaitable[None]]
"""(message, text): answer the message in its chat; failures are logged, not raised."""


class CommandDispatch:
    """Routes a command message to its handler (`command_handlers`, by name) and replies with its text."""

    def __init__(
        self,
        *,
        store: Store,
        auth: Authorizer,
        handlers: dict[str, CommandHandler],
        reply: ReplyFn,
    ) -> None:
        self.store = store
        self.auth = auth
        self.handlers = handlers
        self.reply = reply

    async def run(self, msg: IncomingMessage) -> None:
        try:
            await self._command(msg)
        except DatabaseUnavailableError:
            logger.warning(
                "/%s in %s:%s: database unavailable", msg.command, msg.chat.platform, msg.chat.chat_id
            )
            await self.reply(msg, COMMAND_STORAGE_DOWN)

    async def _command(self, msg: IncomingMessage) -> None:
        name = (msg.command or "").lower()
        if msg.command_target is not None:
            return  # addressed to another bot (the adapter only sets a target that is not ours)
        spec = commands.BY_NAME.get(name)
        if spec is None:
            if msg.chat.kind is ChatKind.PRIVATE or msg.mentions_bot:
                await self.reply(msg, commands.unknown(name))
            return
        is_admin = self.auth.is_admin(msg.chat.platform, msg.author)
        if spec.admin_only and not is_admin:
            logger.warning("refused /%s from non-admin %s on %s", name, msg.author.user_id, msg.chat.platform)
            await self.reply(msg, commands.refusal(spec))
            return
        args, problem = commands.normalise_args(msg.command_args)
        if problem is not None:
            await self.reply(msg, bad_command_args(name, problem))
            return
        chat = await self.store.chat_for(
            msg.chat.platform,
            msg.chat.chat_id,
            msg.chat.thread_id,
            kind=msg.chat.kind.value,
            title=msg.chat.title,
        )
        if not await self.store.claim_command(chat.id, msg.platform_message_id):
            logger.info(
                "duplicate delivery of command %s in %s:%s ignored",
                msg.platform_message_id,
                msg.chat.platform,
                msg.chat.chat_id,
            )
            return
        handler = self.handlers[name]
        try:
            text = await handler(CommandContext(message=msg, chat_pk=chat.id, is_admin=is_admin, args=args))
        except GatewayError as exc:
            logger.warning("/%s failed in %s:%s: %s", name, msg.chat.platform, msg.chat.chat_id, exc)
            text = command_failed(name, exc)
        await self.reply(msg, text)
