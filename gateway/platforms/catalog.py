"""The platform registry: which adapters exist and how each is built from settings.

Adding a platform = one module, one entry here, one contract test. A platform whose token is missing
is not started. SDK modules are imported only when their platform is configured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.config import Settings
from gateway.platforms.base import PlatformAdapter
from gateway.platforms.fleet import Fleet, FleetTimings, RegisteredHere, Registrations, SoleWorker


@dataclass(frozen=True, slots=True)
class PlatformEntry:
    name: str
    token_key: str
    configured: Callable[[Settings], bool]
    build: Callable[[Settings, Fleet, Registrations], PlatformAdapter]
    describe: Callable[[Settings], str]


def fleet_timings(settings: Settings) -> FleetTimings:
    fleet = settings.fleet
    return FleetTimings(
        check_s=fleet.lease_check_s, standby_s=fleet.standby_retry_s, rebalance_s=fleet.rebalance_s
    )


def _telegram(settings: Settings, fleet: Fleet, registrations: Registrations) -> PlatformAdapter:
    from gateway.platforms.telegram.bot import TelegramAdapter

    assert settings.telegram_bot_token is not None
    return TelegramAdapter(
        token=settings.telegram_bot_token.get_secret_value(),
        base_url=str(settings.telegram_base_url),
        base_file_url=str(settings.telegram_base_file_url) if settings.telegram_base_file_url else None,
        max_file_bytes=settings.media.max_file_mb * 1024 * 1024,
        webhook_url=str(settings.telegram_webhook_url) if settings.telegram_webhook_url else None,
        webhook_listen=settings.telegram_webhook_listen,
        webhook_port=settings.telegram_webhook_port,
        webhook_secret=(
            settings.telegram_webhook_secret.get_secret_value() if settings.telegram_webhook_secret else None
        ),
        webhook_max_connections=settings.telegram_webhook_max_connections,
        fleet=fleet,
        fleet_timings=fleet_timings(settings),
        registrations=registrations,
    )


def _discord(settings: Settings, fleet: Fleet, _registrations: Registrations) -> PlatformAdapter:
    from gateway.platforms.discord.connection import DiscordAdapter

    assert settings.discord_bot_token is not None
    return DiscordAdapter(
        token=settings.discord_bot_token.get_secret_value(),
        api_base_url=str(settings.discord_api_base_url).rstrip("/"),
        gateway_url=str(settings.discord_gateway_url) if settings.discord_gateway_url else None,
        shard_count=settings.discord.shard_count,
        identify_interval_s=settings.discord.identify_interval_s,
        fleet=fleet,
        fleet_timings=fleet_timings(settings),
    )


PLATFORMS: tuple[PlatformEntry, ...] = (
    PlatformEntry(
        name="telegram",
        token_key="TELEGRAM_BOT_TOKEN",  # noqa: S106 - the name of the setting, not a secret
        configured=lambda s: s.telegram_bot_token is not None,
        build=_telegram,
        describe=lambda s: (
            "webhook " + str(s.telegram_webhook_url) if s.telegram_webhook_url else "long polling"
        ),
    ),
    PlatformEntry(
        name="discord",
        token_key="DISCORD_BOT_TOKEN",  # noqa: S106 - the name of the setting, not a secret
        configured=lambda s: s.discord_bot_token is not None,
        build=_discord,
        describe=lambda s: f"gateway websocket, message-content intent, {s.discord.shard_count} shard(s)",
    ),
)


def status_lines(settings: Settings) -> list[str]:
    lines = []
    for entry in PLATFORMS:
        if entry.configured(settings):
            lines.append(f"{entry.name}: enabled ({entry.describe(settings)})")
        else:
            lines.append(f"{entry.name}: not started ({entry.token_key} is not set)")
    return lines


def build_adapters(
    settings: Settings, fleet: Fleet | None = None, registrations: Registrations | None = None
) -> list[PlatformAdapter]:
    """The configured adapters; `fleet` shares leases with the other workers (default: none), and
    `registrations` remembers what the fleet registered (default: this process only)."""
    shared = fleet if fleet is not None else SoleWorker()
    kept = registrations if registrations is not None else RegisteredHere()
    return [entry.build(settings, shared, kept) for entry in PLATFORMS if entry.configured(settings)]
