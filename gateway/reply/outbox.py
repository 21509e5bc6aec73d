"""Sending a turn's reply, part by part, with each part's state recorded (the one owner of that).

A reply's parts are recorded as pending in the transaction that marks its messages answered
(`Store.finish_turn`); each part is then claimed, sent (or its streamed preview edited into the final
text) and marked sent with the platform's message id. Transient failures (network, 5xx, flood control)
are retried with back-off; lasting ones (blocked by the user, chat gone, content refused) are recorded
as failed, logged with the chat and counted, never retried. At start-up `resume` sends what a previous
process recorded but did not send.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import timedelta

from gateway.errors import SendError, SendGone, SendRejected, SendRetryLater
from gateway.metrics import Metrics
from gateway.platforms.base import ChatKind, ChatRef, OutgoingMessage
from gateway.platforms.router import Platforms
from gateway.reply.live_reply import LiveReply
from gateway.store import DeliveryRecord, DeliveryStore, NewReply

logger = logging.getLogger(__name__)

RETRY_DELAYS_S = (1.0, 2.0, 4.0, 8.0, 15.0)
"""Waits before the 2nd, 3rd... attempt of a part after a transient failure; then it is given up."""
STALE_CLAIM = timedelta(seconds=30)
"""A part claimed longer ago than this by a process that is gone is sent again by `resume`."""
RESUME_JOB = "deliveries_resume"
"""The second look at open parts after start-up, in `gateway_job_runs` (its result: ok or error)."""
MAX_RETRY_AFTER_S = 60.0
EDIT_FIRST_DELAY_S = 0.5
"""Where a preview is a real message (groups, Discord), the first one waits this long: a reply written
faster is posted once, complete, instead of posted and edited (drafts show at once)."""


class Outbox:
    def __init__(
        self,
        *,
        store: DeliveryStore,
        platforms: Platforms,
        metrics: Metrics | None = None,
        streaming: bool = False,
        interval_s: float = 1.0,
        group_interval_s: float = 3.0,
        retry_delays: Sequence[float] = RETRY_DELAYS_S,
    ) -> None:
        self.store = store
        self.platforms = platforms
        self.metrics = metrics
        self.streaming = streaming
        self.interval_s = interval_s
        self.group_interval_s = group_interval_s
        self.retry_delays = tuple(retry_delays)
        self._resume_task: asyncio.Task[None] | None = None

    # -- a turn's reply ------------------------------------------------------------------------------

    def live(self, chat: ChatRef, *, reply_to: str | None) -> LiveReply | None:
        """Where the turn streams its reply (None: streaming is off or the platform cannot show it)."""
        if not self.streaming:
            return None
        surface = self.platforms.live(chat, reply_to=reply_to)
        if surface is None:
            return None
        interval = self.interval_s if chat.kind is ChatKind.PRIVATE else self.group_interval_s
        first_delay = 0.0 if surface.drafts else EDIT_FIRST_DELAY_S
        return LiveReply(surface, chat, interval_s=interval, first_delay_s=first_delay)

    def reply(
        self,
        chat: ChatRef,
        chat_pk: int,
        text: str,
        *,
        message_pk: int | None,
        reply_to: str | None,
        live: LiveReply | None,
    ) -> NewReply:
        """The reply as it will be recorded: split for the platform, parts already final on screen noted."""
        parts = self.platforms.parts(chat, text)
        sent: dict[int, str] = {}
        if live is not None:
            sent = {i: mid for i, part in enumerate(parts) if (mid := live.on_screen(i, part)) is not None}
        return NewReply(chat_pk, parts or [text], message_pk=message_pk, reply_to=reply_to, sent=sent)

    async def deliver(
        self, chat: ChatRef, records: Sequence[DeliveryRecord], live: LiveReply | None = None
    ) -> None:
        """Send the recorded parts in order; a chat that is gone fails the parts still to come."""
        gone: str | None = None
        for record in records:
            if record.state != "pending":
                continue
            if gone is not None:
                await self.store.delivery_failed(record.id, gone, lasting=True)
                self._observe("failed")
                continue
            if not await self.store.claim_delivery(record.id):
                continue  # sent or being sent by another worker
            gone = await self._deliver_part(chat, record, live)

    async def _deliver_part(
        self, chat: ChatRef, record: DeliveryRecord, live: LiveReply | None
    ) -> str | None:
        """Send one claimed part with retries; returns the reason when the chat is gone for good."""
        where = f"{chat.platform}:{chat.chat_id}"
        attempt = 0
        while True:
            attempt += 1
            try:
                message_id = await self._send_part(chat, record, live)
            except asyncio.CancelledError:
                # Shutting down mid-send: the part is open again for the restart (sent at most twice).
                await asyncio.shield(self.store.delivery_failed(record.id, "interrupted", lasting=False))
                raise
            except (SendGone, SendRejected) as exc:
                await self.store.delivery_failed(record.id, str(exc), lasting=True)
                self._observe("failed")
                logger.error("reply to %s not delivered (part %d, lasting): %s", where, record.part, exc)
                return str(exc) if isinstance(exc, SendGone) else None
            except SendError as exc:
                if attempt > len(self.retry_delays):
                    reason = f"gave up after {attempt} attempts: {exc}"
                    await self.store.delivery_failed(record.id, reason, lasting=True)
                    self._observe("failed")
                    logger.error("reply to %s not delivered (part %d): %s", where, record.part, reason)
                    return None
                wait = self.retry_delays[attempt - 1]
                if isinstance(exc, SendRetryLater):
                    wait = max(wait, min(exc.retry_after, MAX_RETRY_AFTER_S))
                # Open again while waiting: a process that dies now leaves it for the restart.
                await self.store.delivery_failed(record.id, str(exc), lasting=False)
                self._observe("retried")
                logger.warning(
                    "reply to %s (part %d) failed (%s); attempt %d in %.1fs",
                    where,
                    record.part,
                    exc,
                    attempt + 1,
                    wait,
                )
                await asyncio.sleep(wait)
                if not await self.store.claim_delivery(record.id):
                    return None  # taken over by another worker
                continue
            await self.store.delivery_sent(record.id, message_id)
            self._observe("sent")
            return None

    async def _send_part(self, chat: ChatRef, record: DeliveryRecord, live: LiveReply | None) -> str:
        """One attempt: reuse the part's streamed message when there is one, else send it."""
        if live is not None:
            shown = live.on_screen(record.part, record.text)
            if shown is not None:
                return shown
            message_id = live.message_for(record.part)
            if message_id is not None:
                if live.shown(record.part) == record.text:
                    return message_id
                try:
                    await self.platforms.edit(chat, message_id, record.text)
                    return message_id
                except SendRejected as exc:  # the preview is gone or cannot be edited: send anew
                    logger.warning(
                        "%s:%s: streamed message not edited (%s); sending anew",
                        chat.platform,
                        chat.chat_id,
                        exc,
                    )
        sent = await self.platforms.send(
            OutgoingMessage(chat=chat, text=record.text, reply_to_message_id=record.reply_to)
        )
        if not sent.platform_message_ids:
            raise SendError(f"{chat.platform} returned no message id", chat_id=chat.chat_id)
        return sent.platform_message_ids[0]

    def _observe(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.observe_delivery(outcome)

    # -- after a restart -------------------------------------------------------------------------------

    async def resume(self) -> int:
        """Send the parts a previous process recorded but did not send; returns how many were open.

        Parts another process claimed only recently are looked at again once their claim is stale.
        """
        count = await self._resume_once()
        self._resume_task = asyncio.create_task(self._resume_later(), name="deliveries-resume")
        return count

    async def _resume_later(self) -> None:
        await asyncio.sleep(STALE_CLAIM.total_seconds())
        try:
            await self._resume_once()
        except Exception:
            # The parts stay open (counted as waiting in /stats); the failed pass is counted here.
            logger.exception("sending replies left over from before the restart failed")
            result = "error"
        else:
            result = "ok"
        if self.metrics is not None:
            self.metrics.observe_job(RESUME_JOB, result)

    async def _resume_once(self) -> int:
        records = await self.store.open_deliveries(stale_before=self.store.now() - STALE_CLAIM)
        by_chat: dict[int, list[DeliveryRecord]] = {}
        for record in records:
            by_chat.setdefault(record.chat_pk, []).append(record)
        for chat_pk, parts in by_chat.items():
            row = await self.store.get_chat(chat_pk)
            if row is None or not self.platforms.has(row.platform):
                continue
            chat = ChatRef(row.platform, row.chat_id, row.thread_id or None, ChatKind(row.kind), row.title)
            logger.info(
                "sending %d reply part(s) recorded before the restart to %s:%s",
                len(parts),
                row.platform,
                row.chat_id,
            )
            await self._resume_chat(chat, parts)
        return len(records)

    async def _resume_chat(self, chat: ChatRef, parts: Sequence[DeliveryRecord]) -> None:
        stale = self.store.now() - STALE_CLAIM
        gone: str | None = None
        for record in parts:
            if not await self.store.claim_delivery(record.id, stale_before=stale):
                continue
            if gone is not None:
                await self.store.delivery_failed(record.id, gone, lasting=True)
                self._observe("failed")
                continue
            gone = await self._deliver_part(chat, record, None)

    async def stop(self) -> None:
        task, self._resume_task = self._resume_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
