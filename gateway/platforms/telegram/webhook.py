"""The Telegram webhook endpoint: answers 200 only once the update's message is stored.

python-telegram-bot's webhook server (tornado) puts an update on a queue and answers 200 at once, so
a crash before the message is stored loses it; Telegram only retries updates that got an error
status. This small aiohttp server awaits the hand-over before answering: 200 when the message is
stored (or there was nothing to keep), 500 when it could not be (Telegram delivers it again), 403
without the secret token, 400 for a body that is not an update.

Refusals are counted (`refused`, read by the metrics). A run of them is logged once, when it starts:
Telegram sending a secret this worker does not have means the registered secret is not the configured
one, and every update waits until a worker registers it again. Until this worker has checked the
registration (`registered`), refusals are expected after a rotation and only counted.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from gateway.http_site import LocalSite

logger = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 - a header name, not a secret
MAX_BODY = 1 << 20
"""Telegram updates are small; anything larger is not from Telegram."""

Receive = Callable[[dict[str, Any]], Awaitable[bool]]
"""Hands one raw update over; True once it is stored (or needs no storing), False if it could not be."""


class WebhookServer:
    def __init__(
        self,
        *,
        listen: str,
        port: int,
        path: str,
        secret: str | None,
        receive: Receive,
        shutdown_timeout: float,
    ) -> None:
        self._site = LocalSite(listen, port, shutdown_timeout=shutdown_timeout)
        self._path = "/" + path.lstrip("/")
        self._secret = secret
        self._receive = receive
        self.refused = 0
        """Requests refused for a missing or wrong secret token since start."""
        self._refusing = 0
        """Refusals since the last accepted request (a run is logged when it starts)."""
        self.registered = False
        """Set once the webhook registration was checked (and renewed if it differed)."""

    async def start(self) -> None:
        """Bind and serve; raises OSError when the port cannot be bound."""
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post(self._path, self._post)
        await self._site.serve(app)

    async def stop(self) -> None:
        """Stop accepting; requests in flight get `shutdown_timeout` to finish storing, then are cut off
        (unanswered, so Telegram delivers them again)."""
        await self._site.stop()

    async def _post(self, request: web.Request) -> web.Response:
        if self._secret is not None and not hmac.compare_digest(
            request.headers.get(SECRET_HEADER, "").encode(), self._secret.encode()
        ):
            self._refuse()
            return web.Response(status=403)
        if self._refusing:
            logger.info("telegram webhook: the right secret token again, after %d refusal(s)", self._refusing)
            self._refusing = 0
        try:
            data = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError):
            return web.Response(status=400, text="body is not JSON")
        if not isinstance(data, dict) or not isinstance(data.get("update_id"), int):
            return web.Response(status=400, text="body is not a Telegram update")
        try:
            stored = await self._receive(data)
        except Exception:
            logger.exception("telegram webhook: update %s could not be handled", data["update_id"])
            stored = False
        if not stored:
            return web.Response(status=500, text="not stored; deliver again")
        return web.Response(status=200)

    def _refuse(self) -> None:
        self.refused += 1
        if not self.registered:
            return
        self._refusing += 1
        if self._refusing == 1:
            logger.error(
                "telegram webhook: refusing requests without the right secret token (403). If they come "
                "from Telegram, the webhook was registered with another secret than TELEGRAM_WEBHOOK_SECRET "
                "and no update arrives until it is registered again: give every worker the same secret "
                "and restart one (it registers the webhook when its secret differs from the recorded "
                "one). Further refusals are counted in gateway_webhook_refused_total, not logged."
            )
