"""Discord's one sender: replies split under 2000 chars, posts and edits of a reply being written,
reactions and the typing indicator.

`DiscordSender.request` is the single call path: discord.py's `HTTPClient.request` underneath waits
out rate limits (429 retry_after, up to the client's `max_ratelimit_timeout`), and discord.py's and
aiohttp's errors come out as the gateway's send errors (`send_error`). A slash-command reply goes out
as the interaction's followup (in the channel once the interaction is gone). A chunk Discord rejects
is sent again in smaller pieces with link embeds suppressed. Every send forbids @everyone/@here and
role pings; the ids of sent messages are kept so a reply to one is known to be to the bot.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp
import discord

from gateway.errors import SendError, SendGone, SendRejected, SendRetryLater
from gateway.platforms.base import ChatRef, OutgoingMessage, SentMessage, TypingContext
from gateway.platforms.split import split_text

logger = logging.getLogger(__name__)

T = TypeVar("T")

MAX_LENGTH = 2000
FALLBACK_LENGTH = 1000
"""Chunk size for the second attempt after Discord rejects a chunk (400, e.g. code 50035)."""
_OWN_IDS_KEPT = 2000

SAFE_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False)
"""Users may be pinged by id; @everyone, @here and role mentions never are."""


class DiscordSender:
    """The one way out to Discord; `client` returns the connected client or raises `SendError`."""

    def __init__(self, client: Callable[[], discord.Client]) -> None:
        self._client = client
        self.own_ids: dict[int, None] = {}
        """Ids of the latest messages the bot sent, oldest first (at most `_OWN_IDS_KEPT`)."""

    async def request(self, chat_id: str, call: Callable[[], Awaitable[T]], *, on_message: bool = False) -> T:
        """Run one call for `chat_id`; discord.py's and aiohttp's errors come out as send errors.

        `on_message`: the call targets one of the chat's messages (an edit, a reaction), so a 404
        means that message is gone, not the chat.
        """
        try:
            return await call()
        except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise send_error(exc, chat_id, on_message=on_message) from exc

    async def send(self, message: OutgoingMessage) -> SentMessage:
        """Split under 2000 chars and send; a slash-command reply goes out as the interaction followup."""
        ids: list[str] = []
        reference = message.reply_to_message_id
        for chunk in reply_parts(message.text):
            try:
                ids.append(await self._send_chunk(message, chunk, reference))
            except SendRejected:
                ids.extend(await self._send_smaller(message, chunk))
            reference = None
        return SentMessage(tuple(ids))

    async def _send_smaller(self, message: OutgoingMessage, chunk: str) -> list[str]:
        """Second attempt after Discord rejected a chunk: smaller pieces, link embeds suppressed.

        A piece that is rejected again raises `SendRejected` carrying the chat id.
        """
        logger.warning(
            "discord: chat %s rejected a chunk; re-sending in smaller pieces", message.chat.chat_id
        )
        return [
            await self._send_chunk(message, piece, None, plain=True)
            for piece in split_text(chunk, FALLBACK_LENGTH, unit="chars")
        ]

    async def _send_chunk(
        self, message: OutgoingMessage, chunk: str, reply_to: str | None, *, plain: bool = False
    ) -> str:
        """Send one chunk and remember its id as the bot's."""
        sent_id = await self.request(
            message.chat.chat_id, lambda: self._post(message, chunk, reply_to, plain=plain)
        )
        self._remember_own(sent_id)
        return str(sent_id)

    async def _post(self, message: OutgoingMessage, chunk: str, reply_to: str | None, *, plain: bool) -> int:
        handle = message.reply_handle
        if isinstance(handle, discord.Interaction) and not handle.is_expired():
            try:
                followup = await handle.followup.send(
                    chunk, allowed_mentions=SAFE_MENTIONS, wait=True, suppress_embeds=plain
                )
            except discord.NotFound:
                logger.warning("discord: interaction %s is gone; replying in the channel", handle.id)
            else:
                return followup.id
        target = int(message.chat.thread_id or message.chat.chat_id)
        channel = self._client().get_partial_messageable(target)
        if reply_to:
            ref = discord.MessageReference(
                message_id=int(reply_to), channel_id=target, fail_if_not_exists=False
            )
            posted = await channel.send(
                chunk, allowed_mentions=SAFE_MENTIONS, reference=ref, suppress_embeds=plain
            )
        else:
            posted = await channel.send(chunk, allowed_mentions=SAFE_MENTIONS, suppress_embeds=plain)
        return posted.id

    def _remember_own(self, message_id: int) -> None:
        self.own_ids[message_id] = None
        while len(self.own_ids) > _OWN_IDS_KEPT:
            del self.own_ids[next(iter(self.own_ids))]

    def typing(self, chat: ChatRef) -> TypingContext:
        return _Typing(self._client(), int(chat.thread_id or chat.chat_id))

    async def react(self, chat: ChatRef, platform_message_id: str, emoji: str) -> None:
        """Add a reaction (PUT .../reactions/{emoji}/@me); needs the Add Reactions permission."""
        message = self._message(chat, platform_message_id)
        await self.request(chat.chat_id, lambda: message.add_reaction(emoji), on_message=True)

    async def post(self, chat: ChatRef, text: str, *, reply_to: str | None) -> str:
        """Post `text` as one message (no smaller second attempt: a reply being written); returns its id."""
        return await self._send_chunk(OutgoingMessage(chat=chat, text=text), text, reply_to)

    async def edit(self, chat: ChatRef, message_id: str, text: str) -> None:
        """Replace the content of one of the bot's messages (PATCH)."""
        message = self._message(chat, message_id)
        await self.request(
            chat.chat_id, lambda: message.edit(content=text, allowed_mentions=SAFE_MENTIONS), on_message=True
        )

    def _message(self, chat: ChatRef, message_id: str) -> discord.PartialMessage:
        channel = self._client().get_partial_messageable(int(chat.thread_id or chat.chat_id))
        return channel.get_partial_message(int(message_id))


class _Typing:
    """Keeps the typing indicator alive (discord.py re-posts it every 5 s); failures are only logged."""

    def __init__(self, client: discord.Client, channel_id: int) -> None:
        self._inner = client.get_partial_messageable(channel_id).typing()
        self._channel_id = channel_id
        self._entered = False

    async def __aenter__(self) -> None:
        try:
            await self._inner.__aenter__()
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            logger.warning("discord: typing in channel %s failed: %s", self._channel_id, type(exc).__name__)
        else:
            self._entered = True

    async def __aexit__(self, *exc: object) -> None:
        if self._entered:
            await self._inner.__aexit__(None, None, None)


def reply_parts(text: str) -> list[str]:
    """A reply split into the messages it is sent as (before any smaller second attempt)."""
    return split_text(text, MAX_LENGTH, unit="chars")


def send_error(exc: BaseException, chat_id: str, *, on_message: bool = False) -> SendError:
    """discord.py's and aiohttp's errors as the gateway's send errors (`on_message`: see `request`)."""
    if isinstance(exc, discord.RateLimited):
        return SendRetryLater("discord rate limit", retry_after=exc.retry_after, chat_id=chat_id)
    if isinstance(exc, discord.NotFound) and on_message:
        return SendRejected(f"discord: the message is gone (code {exc.code})", chat_id=chat_id)
    if isinstance(exc, discord.Forbidden | discord.NotFound):
        return SendGone(f"discord refused the send ({exc.status}, code {exc.code})", chat_id=chat_id)
    if isinstance(exc, discord.HTTPException):
        if exc.status == 429:
            # discord.py retried on its own already; give up for now and let the caller wait.
            return SendRetryLater("discord rate limit", retry_after=_retry_after(exc), chat_id=chat_id)
        if exc.status == 400:
            return SendRejected(f"discord rejected the content (code {exc.code})", chat_id=chat_id)
        return SendError(f"discord send failed ({exc.status}, code {exc.code})", chat_id=chat_id)
    return SendError(f"discord unreachable: {type(exc).__name__}", chat_id=chat_id)


def _retry_after(exc: discord.HTTPException) -> float:
    header = exc.response.headers.get("Retry-After") if exc.response is not None else None
    try:
        return float(header) if header else 1.0
    except ValueError:
        return 1.0
