"""Sending to Discord: replies split under 2000 chars, edits, reactions and the typing indicator.

A slash-command reply goes out as the interaction's followup (in the channel once the interaction is
gone). A chunk Discord rejects is sent again in smaller pieces with link embeds suppressed. Every send
forbids @everyone/@here and role pings. discord.py's and aiohttp's errors become the gateway's send
errors (`send_error`); the ids of sent messages are kept so a reply to one is known to be to the bot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import aiohttp
import discord

from gateway.errors import SendError, SendGone, SendRejected, SendRetryLater
from gateway.platforms.base import ChatRef, OutgoingMessage, SentMessage, TypingContext
from gateway.platforms.split import split_text

logger = logging.getLogger(__name__)

MAX_LENGTH = 2000
FALLBACK_LENGTH = 1000
"""Chunk size for the second attempt after Discord rejects a chunk (400, e.g. code 50035)."""
_OWN_IDS_KEPT = 2000

SAFE_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False)
"""Users may be pinged by id; @everyone, @here and role mentions never are."""


class DiscordSender:
    """The adapter's outbound half; `client` returns the connected client or raises `SendError`."""

    def __init__(self, client: Callable[[], discord.Client]) -> None:
        self._client = client
        self.own_ids: dict[int, None] = {}
        """Ids of the latest messages the bot sent, oldest first (at most `_OWN_IDS_KEPT`)."""

    async def send(self, message: OutgoingMessage) -> SentMessage:
        """Split under 2000 chars and send; a slash-command reply goes out as the interaction followup."""
        ids: list[str] = []
        reference = message.reply_to_message_id
        for chunk in split_text(message.text, MAX_LENGTH, unit="chars"):
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
        """Send one chunk; translate discord.py's errors into the gateway's send errors."""
        chat_id = message.chat.chat_id
        try:
            sent_id = await self._post(message, chunk, reply_to, plain=plain)
        except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise send_error(exc, chat_id) from exc
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
        channel = self._client().get_partial_messageable(int(chat.thread_id or chat.chat_id))
        try:
            await channel.get_partial_message(int(platform_message_id)).add_reaction(emoji)
        except discord.HTTPException as exc:
            detail = f"discord refused the reaction ({exc.status}, code {exc.code})"
            raise SendError(detail, chat_id=chat.chat_id) from exc
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise SendError(f"discord unreachable: {type(exc).__name__}", chat_id=chat.chat_id) from exc

    async def post(self, chat: ChatRef, text: str, reply_to: str | None) -> str:
        """Post one message (no retries; errors translated); returns its id."""
        message = OutgoingMessage(chat=chat, text=text)
        try:
            sent_id = await self._post(message, text, reply_to, plain=False)
        except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise send_error(exc, chat.chat_id) from exc
        self._remember_own(sent_id)
        return str(sent_id)

    async def edit(self, chat: ChatRef, message_id: str, text: str) -> None:
        """Replace the content of one of the bot's messages (PATCH; discord.py handles rate limits)."""
        channel = self._client().get_partial_messageable(int(chat.thread_id or chat.chat_id))
        try:
            await channel.get_partial_message(int(message_id)).edit(
                content=text, allowed_mentions=SAFE_MENTIONS
            )
        except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise send_error(exc, chat.chat_id, editing=True) from exc


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


def send_error(exc: BaseException, chat_id: str, *, editing: bool = False) -> SendError:
    """discord.py's and aiohttp's errors as the gateway's send errors."""
    if isinstance(exc, discord.RateLimited):
        return SendRetryLater("discord rate limit", retry_after=exc.retry_after, chat_id=chat_id)
    if isinstance(exc, discord.NotFound) and editing:
        return SendRejected(f"discord: the message to edit is gone (code {exc.code})", chat_id=chat_id)
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
