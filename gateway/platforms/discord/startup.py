"""Discord start-up pieces: the background slash-command sync and what a failed connection means.

The sync runs after the gateway is READY, so a rate-limited or failing sync never delays receiving
messages; typed commands work without it. Connection failures that an operator must fix (a rejected
token, a missing privileged intent) become `PlatformConfigError`s whose message says what to change.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import discord
from discord import app_commands

from gateway.errors import PlatformConfigError, PlatformStartError

logger = logging.getLogger(__name__)

SYNC_ATTEMPTS = 6
SYNC_ATTEMPT_TIMEOUT_S = 120.0
"""One sync attempt, including discord.py's own waits on 429, is cut off after this long."""
SYNC_BACKOFF_S = (2.0, 5.0, 15.0, 30.0, 60.0)
INTENTS_HELP = (
    "discord: the bot may not read message content; enable Message Content Intent under "
    "Bot -> Privileged Gateway Intents in the Discord developer portal"
)
TOKEN_HELP = "discord: the bot token was rejected (check DISCORD_BOT_TOKEN)"  # noqa: S105 - not a secret


async def sync_commands(tree: app_commands.CommandTree[Any], count: int) -> None:
    """Register the slash commands; retried with back-off, each attempt bounded, never raising."""
    for attempt in range(1, SYNC_ATTEMPTS + 1):
        try:
            async with asyncio.timeout(SYNC_ATTEMPT_TIMEOUT_S):
                await tree.sync()
        except discord.RateLimited as exc:
            delay, reason = exc.retry_after, f"rate limited for {exc.retry_after:.0f}s"
        except discord.HTTPException as exc:
            if 400 <= exc.status < 500 and exc.status != 429:
                logger.error(
                    "discord: the slash commands were refused (%s, code %s); typed commands still work",
                    exc.status,
                    exc.code,
                )
                return
            delay, reason = (
                SYNC_BACKOFF_S[min(attempt - 1, len(SYNC_BACKOFF_S) - 1)],
                f"HTTP {exc.status}",
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            delay, reason = SYNC_BACKOFF_S[min(attempt - 1, len(SYNC_BACKOFF_S) - 1)], type(exc).__name__
        else:
            logger.info("discord: %d slash commands synced", count)
            return
        if attempt == SYNC_ATTEMPTS:
            break
        logger.warning(
            "discord: slash-command sync failed (%s); retrying in %.0fs (attempt %d of %d)",
            reason,
            delay,
            attempt,
            SYNC_ATTEMPTS,
        )
        await asyncio.sleep(delay)
    logger.error(
        "discord: slash commands not synced after %d attempts; typed commands still work", SYNC_ATTEMPTS
    )


def start_error(exc: BaseException) -> PlatformStartError:
    """The gateway connection's failure as a start error; configuration problems say what to fix."""
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return PlatformConfigError(INTENTS_HELP)
    if isinstance(exc, discord.LoginFailure):
        return PlatformConfigError(TOKEN_HELP)
    if isinstance(exc, discord.ConnectionClosed):
        if exc.code == 4004:
            return PlatformConfigError(TOKEN_HELP)
        if exc.code in (4013, 4014):
            return PlatformConfigError(INTENTS_HELP)
        return PlatformStartError(f"discord gateway closed the connection (code {exc.code})")
    return PlatformStartError(f"discord gateway connection failed: {type(exc).__name__}")
