"""One incoming message, start to finish.

authorize -> command or message -> store (committed before any LLM call) -> should the bot answer?
-> hand the chat to its turn task (`gateway/turn/tasks.py`). Commands are run by `dispatch`, the
abuse limits are `admission`'s, and what the sender is told is worded in `gateway/reply/wording.py`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC
from typing import Any

from agent.context_block import context_block
from agent.types import Message
from gateway.errors import DatabaseUnavailableError, SendError
from gateway.intake.admission import Admission
from gateway.intake.auth import Authorizer
from gateway.intake.dispatch import CommandDispatch, CommandHandler
from gateway.intake.rendering import clean_name, render_incoming
from gateway.intake.reply_context import DEFAULT_QUOTE_CHARS, reply_context
from gateway.intake.spool import Spool
from gateway.intake.voice import VoiceNotes
from gateway.media.intake import Intake, MediaIntake
from gateway.media.notes import Problem, problem_reply
from gateway.platforms.base import ChatKind, IncomingMessage, OutgoingMessage
from gateway.platforms.router import Platforms
from gateway.reply.wording import not_allowed
from gateway.store import NewMessage, Store
from gateway.store.records import ChatRecord
from gateway.turn.tasks import ChatTasks

logger = logging.getLogger(__name__)


def request_context(msg: IncomingMessage) -> dict[str, str]:
    """Date, chat and speaker for the message the bot is about to answer."""
    sent = msg.sent_at.astimezone(UTC) if msg.sent_at.tzinfo else msg.sent_at.replace(tzinfo=UTC)
    ctx = {"time": sent.strftime("%Y-%m-%d %H:%M UTC (%A)"), "platform": msg.chat.platform}
    if msg.chat.title:
        ctx["chat"] = clean_name(msg.chat.title)
    if msg.chat.kind is not ChatKind.PRIVATE:
        ctx["speaker"] = clean_name(msg.author.display_name)
    return ctx


LARGE_TEXT_CHARS = 200_000
"""Messages with more text than this (files) are token-counted in a worker thread."""


class Pipeline:
    """Takes each update from the adapters: runs commands, stores messages, hands chats to their turns."""

    def __init__(
        self,
        *,
        store: Store,
        auth: Authorizer,
        tasks: ChatTasks,
        platforms: Platforms,
        command_handlers: dict[str, CommandHandler],
        admission: Admission,
        spool: Spool | None = None,
        media: MediaIntake | None = None,
        voice: VoiceNotes | None = None,
        ack_reaction: str | None = None,
        reply_quote_chars: int = DEFAULT_QUOTE_CHARS,
        count_tokens: Callable[[Message], int],
    ) -> None:
        self.store = store
        self.count_tokens = count_tokens
        """A message's stored estimate: what it costs in the prompt as sent (`SessionKit.stored_tokens`)."""
        self.auth = auth
        self.tasks = tasks
        self.platforms = platforms
        self.commands = CommandDispatch(store=store, auth=auth, handlers=command_handlers, reply=self._reply)
        self.admission = admission
        self.spool = spool
        self.media = media
        self.voice = voice
        self.ack_reaction = ack_reaction
        self.reply_quote_chars = reply_quote_chars
        self._acks: set[asyncio.Task[None]] = set()

    # -- entry point ---------------------------------------------------------------------------------

    async def handle(self, msg: IncomingMessage) -> None:
        """Adapters call this for every update; it returns once the update may be acknowledged.

        That is: the message is committed to the database or fsynced to the spool, or it was
        deliberately not kept (from a bot, unauthorized, empty, a duplicate, a command, which is
        run here). It raises only when a message could be neither stored nor spooled; the adapter
        must then not acknowledge it, so the platform delivers it again. The turn runs in the
        background. Other errors are logged with the chat.
        """
        platform = msg.chat.platform
        if msg.author.is_self or msg.author.is_bot:
            logger.debug("ignoring message from a bot in %s:%s", platform, msg.chat.chat_id)
            return
        if not self.auth.is_allowed(platform, msg.author):
            await self._guarded(self._refuse_unauthorized, msg)
        elif msg.is_command:
            await self._guarded(self.commands.run, msg)
        else:
            await self._keep(msg)

    async def _guarded(
        self, step: Callable[[IncomingMessage], Awaitable[None]], msg: IncomingMessage
    ) -> None:
        """Run a step that stores nothing the platform must resend; its errors are logged, not raised."""
        try:
            await step(msg)
        except Exception:
            logger.exception(
                "failed to handle message %s in chat %s:%s",
                msg.platform_message_id,
                msg.chat.platform,
                msg.chat.chat_id,
            )

    async def _keep(self, msg: IncomingMessage) -> None:
        """Store a conversation message, or spool it to disk when it cannot be stored now."""
        if msg.attachments and self.media is not None:
            if self.voice is not None:
                msg = self.voice.screen(msg)  # voice notes over a limit are never downloaded
            # Downloaded before anything touches the database, so a spooled message keeps its files.
            msg = await self.media.fetch(msg)
        if self.spool is None:
            await self._message(msg)
            return
        if self.spool.depth:
            # Older messages are still waiting in the spool: queue behind them to keep platform order.
            await self.spool.put(msg)
            return
        try:
            await self._message(msg)
        except DatabaseUnavailableError:
            await self.spool.put(msg)
        except Exception:
            # Not an outage (a refused statement, a bug): keep the message on disk rather than lose it;
            # the spool retries it and sets it aside (`.bad`) if it fails again.
            logger.exception(
                "message %s in chat %s:%s could not be stored; spooling it",
                msg.platform_message_id,
                msg.chat.platform,
                msg.chat.chat_id,
            )
            await self.spool.put(msg)

    async def replay(self, msg: IncomingMessage) -> None:
        """Store a spooled message (idempotent on its platform id) and schedule its turn."""
        await self._message(msg, replayed=True)

    async def _refuse_unauthorized(self, msg: IncomingMessage) -> None:
        logger.info("unauthorized user %s on %s", msg.author.user_id, msg.chat.platform)
        if msg.chat.kind is ChatKind.PRIVATE and self.auth.should_tell_unauthorized(
            msg.chat.platform, msg.author.user_id
        ):
            await self._reply(msg, not_allowed(msg.author.user_id))

    # -- conversation messages -----------------------------------------------------------------------

    async def _message(self, msg: IncomingMessage, *, replayed: bool = False) -> None:
        """Store the message, tell the sender what needs telling, and start its chat's turn if it is due."""
        chat, intake = await self._take_media(msg)
        rendered = render_incoming(msg, intake.labels)
        if not rendered.text:
            logger.debug("empty message %s ignored", msg.platform_message_id)
            return
        addressed = self._addressed(msg)
        wants_reply = addressed and self._answerable(msg, intake)
        # Counted against the sender before the chat row is read; a message replayed from the spool is not.
        refusal = self.admission.over_rate(msg) if wants_reply and not replayed else None
        chat = chat or await self._chat_row(msg)
        held_for_reset = False
        if wants_reply and refusal is None:
            refusal = self.admission.over_budget(msg, chat.id)
            # answered once the budget resets (`limits.answer_after_reset`): stored as pending, not started
            held_for_reset = refusal is not None and self.admission.answer_after_reset
        needs_reply = wants_reply and (refusal is None or held_for_reset)
        if not await self._store(msg, chat.id, intake, rendered.text, needs_reply=needs_reply):
            return
        problems = [*intake.problems, *(Problem(kind, None) for kind in rendered.unsupported_media)]
        if addressed and problems:
            await self._reply(msg, problem_reply(problems, answering_text=needs_reply))
        if refusal is not None:
            await self._reply(msg, refusal)
        if needs_reply and not held_for_reset:
            self._acknowledge(msg)
            self.tasks.schedule(msg.chat, chat.id)

    async def _take_media(self, msg: IncomingMessage) -> tuple[ChatRecord | None, Intake]:
        """Store the message's fetched attachments (which needs the chat row, returned too)."""
        if not (msg.attachments and self.media is not None):
            return None, Intake()
        chat = await self._chat_row(msg)
        intake = await self.media.take(msg, chat.id)
        if intake.audio and self.voice is not None:
            # Heard before the message is stored: a voice note that asks something is answered from
            # its words, and one that is group chatter is stored as what was said, like text.
            await self.voice.hear(msg, chat.id, intake)
        return chat, intake

    @staticmethod
    def _addressed(msg: IncomingMessage) -> bool:
        """Whether the message speaks to the bot (never in a channel, which the bot only reads)."""
        if msg.chat.kind is ChatKind.CHANNEL:
            return False
        return msg.chat.kind is ChatKind.PRIVATE or msg.mentions_bot or msg.reply_to_bot

    @staticmethod
    def _answerable(msg: IncomingMessage, intake: Intake) -> bool:
        """Whether there is something to answer: text, or media the model can read (an edit is not)."""
        has_text = bool((msg.text or "").strip() or (msg.caption or "").strip())
        return (has_text or intake.answerable) and not msg.is_edit

    async def _store(
        self, msg: IncomingMessage, chat_pk: int, intake: Intake, text: str, *, needs_reply: bool
    ) -> bool:
        """Commit the message; False when it was stored before (a duplicate delivery)."""
        content = await self._content(msg, chat_pk, intake, text, needs_reply=needs_reply)
        as_message: Message = {"role": "user", "content": content}
        if intake.text_chars > LARGE_TEXT_CHARS:
            tokens = await asyncio.to_thread(self.count_tokens, as_message)  # seconds for a big file
        else:
            tokens = self.count_tokens(as_message)
        _session, result = await self.store.store_incoming(
            chat_pk,
            NewMessage(
                role="user",
                content=content,
                text=text,
                author_id=msg.author.user_id,
                author_name=msg.author.display_name,
                platform_message_id=msg.platform_message_id,
                token_estimate=tokens,
                needs_reply=needs_reply,
                created_at=msg.sent_at,
                media_ids=intake.media_ids,
            ),
        )
        if not result.created:
            logger.info(
                "duplicate delivery of %s in %s:%s ignored",
                msg.platform_message_id,
                msg.chat.platform,
                msg.chat.chat_id,
            )
        return result.created

    def _acknowledge(self, msg: IncomingMessage) -> None:
        """React to a message the bot is going to answer (`reply.ack_reaction`), in the background."""
        if self.ack_reaction is None:
            return
        task = asyncio.create_task(self._react(msg, self.ack_reaction), name="ack-reaction")
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)

    async def _react(self, msg: IncomingMessage, emoji: str) -> None:
        try:
            await self.platforms.react(msg.chat, msg.platform_message_id, emoji)
        except SendError as exc:
            logger.warning(
                "could not react to %s in %s:%s: %s",
                msg.platform_message_id,
                msg.chat.platform,
                msg.chat.chat_id,
                exc,
            )
        except Exception:
            logger.exception(
                "reaction to %s in %s:%s failed", msg.platform_message_id, msg.chat.platform, msg.chat.chat_id
            )

    def cancel_reactions(self) -> None:
        """At shutdown: a reaction not made by now is not worth holding the shutdown for."""
        for ack in self._acks:
            ack.cancel()

    async def _content(
        self, msg: IncomingMessage, chat_pk: int, intake: Intake, text: str, *, needs_reply: bool
    ) -> list[dict[str, Any]]:
        """What is stored as the message's content: what the model sees of it, decided once."""
        content: list[dict[str, Any]] = [*intake.blocks, {"type": "text", "text": text}]
        if msg.reply_to is not None:
            # What it replies to goes with it, but not into `text` (recall indexes that as what was said).
            quoted = await reply_context(self.store, chat_pk, msg.reply_to, max_chars=self.reply_quote_chars)
            if quoted is not None:
                content.insert(len(content) - 1, quoted)
        if needs_reply:
            # Per-request context travels with the message it belongs to (never in the system prompt),
            # so every earlier message stays byte-identical and the cached prefix keeps hitting.
            content.insert(0, context_block(request_context(msg)))
        return content

    async def _chat_row(self, msg: IncomingMessage) -> ChatRecord:
        return await self.store.chat_for(
            msg.chat.platform,
            msg.chat.chat_id,
            msg.chat.thread_id,
            kind=msg.chat.kind.value,
            title=msg.chat.title,
        )

    # -- replies -------------------------------------------------------------------------------------

    async def _reply(self, msg: IncomingMessage, text: str) -> None:
        out = OutgoingMessage(
            chat=msg.chat,
            text=text,
            reply_to_message_id=msg.platform_message_id,
            reply_handle=msg.reply_handle,
        )
        try:
            await self.platforms.send(out)
        except SendError as exc:
            logger.error("could not send reply to %s:%s: %s", msg.chat.platform, msg.chat.chat_id, exc)
