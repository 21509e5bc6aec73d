"""One incoming message, start to finish (DESIGN.md "Data flow").

authorize -> command or message -> store (committed before any LLM call) -> should the bot answer?
-> schedule the chat's turn. Turns run in one task per chat in this process (and under a database
lock across processes), so a chat never has two turns at once and nothing is answered twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agent.context_block import context_block
from agent.tokens import estimate_message
from agent.types import Message
from gateway.commands import menu as commands
from gateway.commands.menu import CommandContext
from gateway.errors import ChatLockTimeout, DatabaseUnavailableError, GatewayError, SendError, StoreError
from gateway.intake.auth import Authorizer
from gateway.intake.rendering import clean_name, render_incoming
from gateway.intake.reply_context import DEFAULT_QUOTE_CHARS, reply_context
from gateway.intake.spool import Spool
from gateway.media.intake import Intake, MediaIntake
from gateway.media.notes import Problem, problem_reply
from gateway.platforms.base import ChatKind, ChatRef, IncomingMessage, OutgoingMessage
from gateway.store import NewMessage, Store
from gateway.store.records import ChatRecord
from gateway.turn.runner import TurnRunner

logger = logging.getLogger(__name__)

SendFn = Callable[[OutgoingMessage], Awaitable[object]]
ReactFn = Callable[[ChatRef, str, str], Awaitable[None]]
"""(chat, platform message id, emoji): put a reaction on a received message; raises SendError."""
CommandHandler = Callable[[CommandContext], Awaitable[str]]


@dataclass
class RateLimiter:
    """Sliding one-minute window per (platform, user)."""

    per_minute: int
    clock: Callable[[], float] = time.monotonic
    _hits: dict[tuple[str, str], deque[float]] = field(default_factory=dict)

    def allow(self, platform: str, user_id: str) -> bool:
        now = self.clock()
        q = self._hits.setdefault((platform, user_id), deque())
        while q and now - q[0] > 60.0:
            q.popleft()
        if len(q) >= self.per_minute:
            return False
        q.append(now)
        return True


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
TURN_RETRY_DELAYS_S = (2.0, 8.0, 30.0)
TURN_FAILED_REPLY = (
    "Sorry, I could not answer just now because of an internal problem. Your messages are saved and "
    "will be answered with your next message."
)


class Pipeline:
    def __init__(
        self,
        *,
        store: Store,
        auth: Authorizer,
        turns: TurnRunner,
        send: SendFn,
        command_handlers: dict[str, CommandHandler],
        rate_limiter: RateLimiter,
        daily_budget_usd: float,
        spool: Spool | None = None,
        db_retry_s: float = 1.0,
        media: MediaIntake | None = None,
        react: ReactFn | None = None,
        ack_reaction: str | None = None,
        reply_quote_chars: int = DEFAULT_QUOTE_CHARS,
    ) -> None:
        self.store = store
        self.auth = auth
        self.turns = turns
        self.send = send
        self.command_handlers = command_handlers
        self.rate_limiter = rate_limiter
        self.daily_budget_usd = daily_budget_usd
        self.spool = spool
        self.db_retry_s = db_retry_s
        self.media = media
        self.react = react
        self.ack_reaction = ack_reaction
        self.reply_quote_chars = reply_quote_chars
        self._acks: set[asyncio.Task[None]] = set()
        self._tasks: dict[tuple[str, str, str], asyncio.Task[None]] = {}
        self._dirty: set[tuple[str, str, str]] = set()
        self._stopping = False

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
            await self._guarded(self._run_command, msg)
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

    async def _run_command(self, msg: IncomingMessage) -> None:
        try:
            await self._command(msg)
        except DatabaseUnavailableError:
            logger.warning(
                "/%s in %s:%s: database unavailable", msg.command, msg.chat.platform, msg.chat.chat_id
            )
            await self._reply(
                msg, "Storage is unavailable right now; please try the command again in a minute."
            )

    async def _keep(self, msg: IncomingMessage) -> None:
        """Store a conversation message, or spool it to disk when it cannot be stored now."""
        if msg.attachments and self.media is not None:
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
            await self._reply(
                msg,
                f"Sorry, you are not allowed to use this bot. Your user id is {msg.author.user_id}; "
                "an admin can add it to the allowed users.",
            )

    # -- commands ------------------------------------------------------------------------------------

    async def _command(self, msg: IncomingMessage) -> None:
        name = (msg.command or "").lower()
        if msg.command_target is not None:
            return  # addressed to another bot (the adapter only sets a target that is not ours)
        spec = commands.BY_NAME.get(name)
        if spec is None:
            if msg.chat.kind is ChatKind.PRIVATE or msg.mentions_bot:
                await self._reply(msg, commands.unknown(name))
            return
        is_admin = self.auth.is_admin(msg.chat.platform, msg.author)
        if spec.admin_only and not is_admin:
            logger.warning("refused /%s from non-admin %s on %s", name, msg.author.user_id, msg.chat.platform)
            await self._reply(msg, commands.refusal(spec))
            return
        args, problem = commands.normalise_args(msg.command_args)
        if problem is not None:
            await self._reply(msg, f"/{name}: {problem}.")
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
        handler = self.command_handlers[name]
        try:
            text = await handler(CommandContext(message=msg, chat_pk=chat.id, is_admin=is_admin, args=args))
        except GatewayError as exc:
            logger.warning("/%s failed in %s:%s: %s", name, msg.chat.platform, msg.chat.chat_id, exc)
            text = f"/{name} failed: {exc}"
        await self._reply(msg, text)

    # -- conversation messages -----------------------------------------------------------------------

    def _should_answer(self, msg: IncomingMessage) -> bool:
        return msg.chat.kind is ChatKind.PRIVATE or msg.mentions_bot or msg.reply_to_bot

    async def _message(self, msg: IncomingMessage, *, replayed: bool = False) -> None:
        chat = None
        intake = Intake()
        if msg.attachments and self.media is not None:
            chat = await self._chat_row(msg)
            intake = await self.media.take(msg, chat.id)
        rendered = render_incoming(msg, intake.labels)
        if not rendered.text:
            logger.debug("empty message %s ignored", msg.platform_message_id)
            return
        addressed = self._should_answer(msg) and msg.chat.kind is not ChatKind.CHANNEL
        problems = [*intake.problems, *(Problem(kind, None) for kind in rendered.unsupported_media)]
        has_text = bool((msg.text or "").strip() or (msg.caption or "").strip())
        needs_reply = addressed and (has_text or intake.answerable) and not msg.is_edit
        refusal: str | None = None
        if (
            needs_reply
            and not replayed
            and not self.rate_limiter.allow(msg.chat.platform, msg.author.user_id)
        ):
            needs_reply, refusal = (
                False,
                "You're sending messages faster than I can answer. I kept this one; "
                "please wait a minute before asking again.",
            )
        chat = chat or await self._chat_row(msg)
        if needs_reply and self.daily_budget_usd > 0:
            spent = await self.store.cost_since(chat.id, datetime.now(UTC) - timedelta(days=1))
            if spent >= self.daily_budget_usd:
                needs_reply = False
                refusal = (
                    f"This chat has used its daily budget (${self.daily_budget_usd:.2f}). "
                    "I kept your message and will answer again tomorrow."
                )
        content = await self._content(msg, chat.id, intake, rendered.text, needs_reply=needs_reply)
        as_message: Message = {"role": "user", "content": content}
        if intake.text_chars > LARGE_TEXT_CHARS:
            tokens = await asyncio.to_thread(estimate_message, as_message)  # seconds for a big file
        else:
            tokens = estimate_message(as_message)
        _session, result = await self.store.store_incoming(
            chat.id,
            NewMessage(
                role="user",
                content=content,
                text=rendered.text,
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
            return
        if addressed and problems:
            await self._reply(msg, problem_reply(problems, answering_text=needs_reply))
        if refusal is not None:
            await self._reply(msg, refusal)
        if needs_reply:
            self._acknowledge(msg)
            self.schedule(msg.chat, chat.id)

    def _acknowledge(self, msg: IncomingMessage) -> None:
        """React to a message the bot is going to answer (`reply.ack_reaction`), in the background."""
        if self.react is None or self.ack_reaction is None:
            return
        task = asyncio.create_task(self._react(msg, self.ack_reaction), name="ack-reaction")
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)

    async def _react(self, msg: IncomingMessage, emoji: str) -> None:
        assert self.react is not None
        try:
            await self.react(msg.chat, msg.platform_message_id, emoji)
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

    # -- turn scheduling -----------------------------------------------------------------------------

    def schedule(self, chat: ChatRef, chat_pk: int) -> None:
        """Make sure a turn task runs for the chat; a running one picks the new message up."""
        key = chat.key
        self._dirty.add(key)
        if self._stopping:
            return  # shutting down: the message is stored and is answered after the restart
        task = self._tasks.get(key)
        if task is None or task.done():
            self._tasks[key] = asyncio.create_task(self._chat_loop(chat, chat_pk), name=f"turns:{key}")

    async def _chat_loop(self, chat: ChatRef, chat_pk: int) -> None:
        key = chat.key
        failures = 0
        try:
            while key in self._dirty and not self._stopping:
                self._dirty.discard(key)
                try:
                    await self.turns.answer_pending(chat, chat_pk)
                    failures = 0
                except DatabaseUnavailableError:
                    # The messages are stored and still unanswered: try again once the database is back.
                    logger.warning(
                        "turn in chat %s:%s waits for the database; retrying in %.0fs",
                        chat.platform,
                        chat.chat_id,
                        self.db_retry_s,
                    )
                    self._dirty.add(key)
                    await asyncio.sleep(self.db_retry_s)
                except (ChatLockTimeout, StoreError) as exc:
                    # The messages are stored and still unanswered: retry a few times, then tell the
                    # chat; they stay pending and are answered with the next message or after a restart.
                    failures += 1
                    if failures > len(TURN_RETRY_DELAYS_S):
                        logger.error(
                            "giving up on chat %s:%s after %d failed turns: %s",
                            chat.platform,
                            chat.chat_id,
                            failures,
                            exc,
                        )
                        await self._notify(chat, TURN_FAILED_REPLY)
                        continue
                    delay = TURN_RETRY_DELAYS_S[failures - 1]
                    logger.warning(
                        "turn failed in chat %s:%s (%s: %s); retrying in %.0fs",
                        chat.platform,
                        chat.chat_id,
                        type(exc).__name__,
                        exc,
                        delay,
                    )
                    self._dirty.add(key)
                    await asyncio.sleep(delay)
        except Exception:
            logger.exception("turn failed in chat %s:%s", chat.platform, chat.chat_id)
        finally:
            if self._tasks.get(key) is asyncio.current_task():
                del self._tasks[key]

    async def _notify(self, chat: ChatRef, text: str) -> None:
        try:
            await self.send(OutgoingMessage(chat=chat, text=text))
        except SendError as exc:
            logger.error("could not notify %s:%s: %s", chat.platform, chat.chat_id, exc)

    def stop_new_turns(self) -> None:
        """At shutdown: running turns may finish; messages stored from now on wait for the restart."""
        self._stopping = True

    async def cancel_turns(self) -> int:
        """Cancel the turns still running (their messages stay unanswered, for the restart)."""
        for ack in self._acks:
            ack.cancel()  # a reaction not made by now is not worth holding the shutdown for
        tasks = [t for t in self._tasks.values() if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return len(tasks)

    async def drain(self, wait_s: float | None = None) -> None:
        """Wait for running turns (used at shutdown and in tests)."""
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while self._tasks:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if remaining == 0.0:
                return
            await asyncio.wait(list(self._tasks.values()), timeout=remaining)

    # -- replies -------------------------------------------------------------------------------------

    async def _reply(self, msg: IncomingMessage, text: str) -> None:
        out = OutgoingMessage(
            chat=msg.chat,
            text=text,
            reply_to_message_id=msg.platform_message_id,
            reply_handle=msg.reply_handle,
        )
        try:
            await self.send(out)
        except SendError as exc:
            logger.error("could not send reply to %s:%s: %s", msg.chat.platform, msg.chat.chat_id, exc)
