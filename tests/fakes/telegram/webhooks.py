"""The fake Bot API's webhook: `setWebhook` / `deleteWebhook` / `getWebhookInfo` as Telegram answers
them, and (when asked for) delivery of queued updates to the registered URL the way Telegram does it.

Like Telegram: `setWebhook` within a second of the previous one is refused with 429 "retry after 1";
`allowed_updates` left out keeps the previous list, an empty list means the default types;
`max_connections` defaults to 40 (1-100); the secret token is 1-256 of A-Z a-z 0-9 _ -. `getWebhookInfo`
reports the URL, pending updates, `max_connections`, `allowed_updates` (when a list was set) and the last
delivery error, never the secret. A delivery is a POST of one update with the registered secret in
`X-Telegram-Bot-Api-Secret-Token`; any answer but 2xx keeps the update pending, records "Wrong response
from the webhook: 403 Forbidden" (or the connection error) as the last error, and is retried.
"""

from __future__ import annotations

import asyncio
import re
import time
from http import HTTPStatus
from typing import Any

import aiohttp

from tests.fakes.telegram.wire import ApiError, Params

DEFAULT_TYPES = frozenset(
    {"message", "edited_message", "channel_post", "edited_channel_post", "callback_query"}
)
"""The update types of a webhook registered without a list (Telegram's default is every type but
chat_member, message_reaction and message_reaction_count; these are the ones the fake makes)."""
_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


class TelegramWebhooks:
    """Mixed into `FakeTelegram`; `_init_webhooks` sets the state up."""

    _updates: list[dict[str, Any]]
    _closing: bool

    def _wake(self) -> None: ...  # pragma: no cover - FakeTelegram's

    def _init_webhooks(self, *, deliver: bool, retry_s: float) -> None:
        self.webhook: dict[str, Any] = {}
        """The registration: url, secret_token, allowed_updates (None: default types), max_connections."""
        self.webhook_error: tuple[int, str] | None = None
        """(unix time, message) of the last failed delivery, as getWebhookInfo reports it."""
        self.webhook_deliveries: list[tuple[int, int]] = []
        """(update_id, HTTP status or 0 for no answer) of every delivery attempt."""
        self._deliver = deliver
        self._retry_s = retry_s
        self._last_set_webhook: float | None = None
        self._delivery: asyncio.Task[None] | None = None
        self._delivery_due = asyncio.Event()

    def _start_delivery(self) -> None:
        if self._deliver:
            self._delivery = asyncio.get_running_loop().create_task(self._deliver_forever())

    async def _stop_delivery(self) -> None:
        task, self._delivery = self._delivery, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    # Bot API methods -----------------------------------------------------------------------------

    async def _m_setwebhook(self, params: Params) -> bool:
        url = params.get_str("url") or ""
        if url and not url.startswith(("https://", "http://")):
            raise ApiError(400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
        secret = params.get_str("secret_token")
        if secret is not None and not _SECRET.match(secret):
            raise ApiError(400, "Bad Request: secret token contains unallowed characters")
        max_connections = params.get_int("max_connections") or 40
        if not 1 <= max_connections <= 100:
            raise ApiError(400, "Bad Request: bad webhook: max_connections must be between 1 and 100")
        now = time.monotonic()
        if self._last_set_webhook is not None and now - self._last_set_webhook < 1.0:
            # The Bot API refuses a second setWebhook within a second.
            raise ApiError(429, "Too Many Requests: retry after 1", {"retry_after": 1})
        self._last_set_webhook = now
        allowed = params.get_json("allowed_updates")
        if allowed is None:
            allowed = self.webhook.get("allowed_updates")  # left out: the previous list stays
        self.webhook = {
            "url": url,
            "secret_token": secret,
            "allowed_updates": list(allowed) if allowed else None,
            "max_connections": max_connections,
        }
        if params.get_json("drop_pending_updates"):
            self._updates.clear()
        self._delivery_due.set()
        return True

    async def _m_deletewebhook(self, params: Params) -> bool:
        self.webhook = {}
        if params.get_json("drop_pending_updates"):
            self._updates.clear()
        return True

    async def _m_getwebhookinfo(self, params: Params) -> dict[str, Any]:
        info: dict[str, Any] = {
            "url": self.webhook.get("url", ""),
            "has_custom_certificate": False,
            "pending_update_count": len(self._updates),
        }
        if self.webhook.get("url"):
            info["max_connections"] = self.webhook["max_connections"]
            if self.webhook.get("allowed_updates"):
                info["allowed_updates"] = self.webhook["allowed_updates"]
            if self.webhook_error is not None:
                info["last_error_date"], info["last_error_message"] = self.webhook_error
        return info

    # Delivery ------------------------------------------------------------------------------------

    async def _deliver_forever(self) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
            while not self._closing:
                url = self.webhook.get("url")
                if not url or not self._updates:
                    self._delivery_due.clear()
                    await _quietly_wait(self._delivery_due, self._retry_s)
                    continue
                update = self._updates[0]
                if not self._wanted(update):
                    self._updates.pop(0)  # Telegram never sends a type the bot did not ask for
                    continue
                delivered = await self._post(session, url, update)
                if delivered and self._updates and self._updates[0] is update:
                    self._updates.pop(0)
                self._wake()
                if not delivered:
                    await asyncio.sleep(self._retry_s)

    def _wanted(self, update: dict[str, Any]) -> bool:
        allowed = self.webhook.get("allowed_updates") or DEFAULT_TYPES
        return any(key in allowed for key in update if key != "update_id")

    async def _post(self, session: aiohttp.ClientSession, url: str, update: dict[str, Any]) -> bool:
        secret = self.webhook.get("secret_token")
        headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret else {}
        try:
            async with session.post(url, json=update, headers=headers) as resp:
                await resp.read()
                status = resp.status
        except aiohttp.ClientError:
            self.webhook_deliveries.append((update["update_id"], 0))
            self.webhook_error = (int(time.time()), "Connection refused")
            return False
        self.webhook_deliveries.append((update["update_id"], status))
        if 200 <= status < 300:
            return True
        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
        self.webhook_error = (int(time.time()), f"Wrong response from the webhook: {status} {phrase}".strip())
        return False


async def _quietly_wait(event: asyncio.Event, timeout: float) -> None:
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return
