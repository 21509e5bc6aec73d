"""Telegram with several workers: the webhook set once, and one poller with standbys.

Webhook: the Bot API refuses a second `setWebhook` within a second (429 "retry after 1"), so workers
starting together would fail each other. One worker at a time (the `telegram:webhook` lease) reads
`getWebhookInfo` and the fleet's record of what it registered (`registration`); a webhook that matches
both (URL, secret, update types, `max_connections`) is left as it is, otherwise it is set (a flood wait
is waited out) and the record updated. Delivery errors Telegram reports are logged.

Polling: Telegram answers a second `getUpdates` consumer with 409 Conflict, so only the holder of the
`telegram:polling` lease polls. The others stand by and try to take it every `standby_s`; a holder
checks its lease every `check_s` and stops polling if another worker took it. Every worker still runs
turns for any chat: updates are stored first and the turns follow from the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from telegram import Bot
from telegram.error import RetryAfter

from gateway.errors import StoreError
from gateway.platforms.fleet import Fleet, FleetTimings, Registered, Registrations
from gateway.platforms.telegram.polling import retry_after_seconds
from gateway.platforms.telegram.registration import WantedWebhook, delivery_trouble, reasons_to_register

logger = logging.getLogger(__name__)

WEBHOOK_LEASE = "telegram:webhook"
POLLING_LEASE = "telegram:polling"
SET_WEBHOOK_ATTEMPTS = 5
MAX_FLOOD_WAIT_S = 30.0


async def ensure_webhook(
    api: Bot, fleet: Fleet, registrations: Registrations, wanted: WantedWebhook, *, secret: str | None
) -> bool:
    """Register `wanted` unless Telegram and the fleet's record show it is in place; True when
    `setWebhook` was called.

    Raises `RetryAfter` when flood control outlasts `SET_WEBHOOK_ATTEMPTS` waits.
    """
    async with fleet.exclusive(WEBHOOK_LEASE):
        info = await api.get_webhook_info()
        trouble = delivery_trouble(info, datetime.now(UTC))
        if trouble is not None:
            logger.warning("telegram: Telegram reports a failed webhook delivery: %s", trouble)
        bot_id = str(api.id)
        recorded = await _recorded(registrations, bot_id)
        reasons = reasons_to_register(wanted, recorded, info)
        if not reasons:
            logger.info("telegram: the webhook is registered as configured; left as it is")
            return False
        logger.info("telegram: registering the webhook (%s)", "; ".join(reasons))
        await _set_webhook(api, wanted, secret)
        try:
            await registrations.record(
                "telegram",
                bot_id,
                url=wanted.url,
                secret_hash=wanted.secret_hash,
                allowed_updates=wanted.allowed_updates,
                max_connections=wanted.max_connections,
                worker=fleet.worker,
            )
        except StoreError as exc:
            logger.warning("telegram: webhook set but not recorded (%s); the next start sets it again", exc)
    return True


async def _recorded(registrations: Registrations, bot_id: str) -> Registered | None:
    try:
        return await registrations.registered("telegram", bot_id)
    except StoreError as exc:
        logger.warning("telegram: the webhook registration could not be read (%s); registering it", exc)
        return None


async def _set_webhook(api: Bot, wanted: WantedWebhook, secret: str | None) -> None:
    for attempt in range(1, SET_WEBHOOK_ATTEMPTS + 1):
        try:
            await api.set_webhook(
                url=wanted.url,
                allowed_updates=list(wanted.allowed_updates),
                max_connections=wanted.max_connections,
                secret_token=secret,
            )
            return
        except RetryAfter as exc:
            wait = min(retry_after_seconds(exc), MAX_FLOOD_WAIT_S)
            if attempt == SET_WEBHOOK_ATTEMPTS:
                raise
            logger.warning("telegram: setWebhook flood control; waiting %.0fs", wait)
            await asyncio.sleep(wait)


class PollingLease:
    """Keeps this worker polling while it holds `telegram:polling`, standing by otherwise.

    `begin` starts polling (called once the lease is taken), `end` stops it (the lease was lost).
    """

    def __init__(
        self,
        fleet: Fleet,
        timings: FleetTimings,
        *,
        begin: Callable[[], Awaitable[None]],
        end: Callable[[], Awaitable[None]],
    ) -> None:
        self._fleet = fleet
        self._timings = timings
        self._begin = begin
        self._end = end
        self._task: asyncio.Task[None] | None = None
        self.polling = False

    async def start(self) -> None:
        """Take the lease now if it is free (and start polling); keep watching in the background.

        A failure to start polling here is the start-up's failure; later ones are logged and retried.
        """
        await self._try_take(starting=True)
        if not self.polling:
            holder = await self._holder()
            logger.info("telegram: standing by; %s polls", holder or "another worker")
        self._task = asyncio.create_task(self._watch(), name="telegram:polling-lease")

    async def stop(self) -> None:
        """Stop watching; the caller stops polling and then calls `release`."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def release(self) -> None:
        if self.polling:
            self.polling = False
            with contextlib.suppress(StoreError):
                await self._fleet.release(POLLING_LEASE)

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._timings.check_s if self.polling else self._timings.standby_s)
            if self.polling:
                await self._check()
            else:
                await self._try_take()

    async def _try_take(self, *, starting: bool = False) -> None:
        try:
            taken = await self._fleet.try_take(POLLING_LEASE)
        except StoreError as exc:
            logger.warning("telegram: could not reach the database to take the polling lease (%s)", exc)
            return
        if not taken:
            return
        logger.info("telegram: this worker (%s) polls", self._fleet.worker)
        self.polling = True
        try:
            await self._begin()
        except Exception as exc:
            await self.release()
            if starting:
                raise
            logger.error("telegram: could not take over polling (%r); standing by", exc)

    async def _check(self) -> None:
        try:
            lost = await self._fleet.check()
        except StoreError as exc:
            # Nobody can take the lease while the database is away: keep polling.
            logger.warning("telegram: polling lease not checked (%s); still polling", exc)
            return
        if POLLING_LEASE in lost:
            logger.warning("telegram: another worker took the polling lease; standing by")
            self.polling = False
            await self._end()

    async def _holder(self) -> str | None:
        try:
            return (await self._fleet.holders([POLLING_LEASE])).get(POLLING_LEASE)
        except StoreError:
            return None
