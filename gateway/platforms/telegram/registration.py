"""Whether the Telegram webhook must be registered again, and what Telegram says about its deliveries.

`getWebhookInfo` reports the URL, and usually the update types and `max_connections`, but never the
secret token, so a webhook already at our URL may still carry an old secret (Telegram then sends it,
the webhook server answers 403, and nothing is answered). The fleet therefore remembers what it
registered (`gateway.platforms.fleet.Registrations`, the secret as a keyed hash) and a worker registers
again when its settings differ from that record or from what Telegram reports.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from telegram import Bot, WebhookInfo
from telegram.request import HTTPXRequest

from gateway.platforms.fleet import Registered

DEFAULT_MAX_CONNECTIONS = 40
"""Telegram's default for `setWebhook`'s `max_connections` (1-100)."""


def secret_hash(token: str, secret: str | None) -> str:
    """The secret as kept in the database: HMAC-SHA256 keyed with the bot token ("" for no secret), so
    the record alone cannot be used to guess it."""
    if not secret:
        return ""
    return hmac.new(token.encode(), secret.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class WantedWebhook:
    """What this worker would register."""

    url: str
    secret_hash: str
    allowed_updates: tuple[str, ...]
    max_connections: int

    @classmethod
    def of(
        cls, *, url: str, token: str, secret: str | None, allowed_updates: Sequence[str], max_connections: int
    ) -> WantedWebhook:
        return cls(url, secret_hash(token, secret), tuple(allowed_updates), max_connections)


def reasons_to_register(wanted: WantedWebhook, recorded: Registered | None, info: WebhookInfo) -> list[str]:
    """Why `setWebhook` must be called (empty: the webhook is as this worker would set it)."""
    if info.url != wanted.url:
        return ["no webhook is set" if not info.url else "the webhook points at another URL"]
    reasons = []
    if recorded is None:
        reasons.append("no registration is recorded")
    elif recorded.url != wanted.url:
        reasons.append("the recorded URL differs")
    if recorded is not None and recorded.secret_hash != wanted.secret_hash:
        reasons.append("the secret token changed")
    reported = set(info.allowed_updates or ())  # empty: not reported
    if (recorded is not None and set(recorded.allowed_updates) != set(wanted.allowed_updates)) or (
        reported and reported != set(wanted.allowed_updates)
    ):
        reasons.append("the update types changed")
    if (recorded is not None and recorded.max_connections != wanted.max_connections) or (
        info.max_connections is not None and info.max_connections != wanted.max_connections
    ):
        reasons.append("max_connections changed")
    return reasons


def delivery_trouble(info: WebhookInfo, now: datetime) -> str | None:
    """Telegram's last delivery error, with its age and the updates waiting, or None when none is
    reported."""
    if not info.last_error_message:
        return None
    when = info.last_error_date
    age = f"{_span((now - when).total_seconds())} ago" if when is not None else "at an unknown time"
    return f"{info.last_error_message!r} ({age}; {info.pending_update_count} update(s) pending)"


def _span(seconds: float) -> str:
    s = max(0, round(seconds))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    if s < 2 * 86400:
        return f"{s // 3600} h"
    return f"{s // 86400} d"


@dataclass(frozen=True, slots=True)
class WebhookState:
    """What `getWebhookInfo` reports, without the SDK's types (for `doctor`)."""

    bot_id: str
    url: str
    pending: int
    trouble: str | None
    """The last delivery error with its age and the updates pending, when Telegram reports one."""
    last_error_at: datetime | None


async def read_webhook(*, token: str, base_url: str, timeout_s: float, now: datetime) -> WebhookState:
    """Ask Telegram about the bot's webhook. Raises `telegram.error.TelegramError` when it cannot."""
    request = HTTPXRequest(connect_timeout=timeout_s, read_timeout=timeout_s)
    async with Bot(token, base_url=base_url, request=request) as bot:
        info = await bot.get_webhook_info()
        return WebhookState(
            bot_id=str(bot.id),
            url=info.url,
            pending=info.pending_update_count,
            trouble=delivery_trouble(info, now),
            last_error_at=info.last_error_date,
        )
