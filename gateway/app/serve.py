"""The process around a `Gateway`: `run` serves every configured platform, `chat` the local console.

Both refuse to start without an API key, with an unknown context engine or with a model the API does not
know (an API that cannot be reached does not stop them), bring an SQLite database to the newest schema
(a Postgres one that is behind stops the start with the command to run), open the store and the model
clients, serve until SIGINT/SIGTERM (or the console ends), and stop within
`shutdown_timeout_s`: the gateway first, then the model clients and the database in its last second.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from agent.errors import LLMError, LLMNotFoundError
from agent.llm import AnthropicClient
from gateway.app.gateway import Gateway
from gateway.app.lifecycle import StopRequested, stop_on_signals, unless_stopped
from gateway.app.wiring import check_models, context_engine
from gateway.config import DEFAULT_MODEL, DEFAULT_SUMMARY_MODEL, ConfigError, Settings
from gateway.platforms.base import PlatformAdapter
from gateway.platforms.catalog import build_adapters, status_lines
from gateway.platforms.fleet import Fleet, SoleWorker
from gateway.store import Store
from gateway.store.locks.leases import PostgresLeases
from gateway.store.migrate import ensure_schema
from gateway.store.webhooks.registrations import WebhookRecords

logger = logging.getLogger(__name__)

NO_PLATFORM_HELP = (
    "No chat platform is configured. Set TELEGRAM_BOT_TOKEN and/or DISCORD_BOT_TOKEN (see .env.example), "
    "or run `python -m gateway chat` to talk to the bot in this terminal."
)
NO_KEY_HELP = (
    "ANTHROPIC_API_KEY is not set; the bot cannot answer without it (put it in .env, see .env.example), "
    "or try the demo without a key: `make demo`."
)
_CLOSE_TIMEOUT_S = 1.0
"""Of `shutdown_timeout_s`, what closing the model clients and the database may take at the end."""
MODEL_CHECK_TIMEOUT_S = 5.0
"""How long start-up waits to learn whether the API knows the configured model."""


def _make_llm(settings: Settings, base_url: str | None = None) -> AnthropicClient:
    """A client of the Anthropic API at `base_url` (default: the configured one), with the agent's
    timeouts: the reply model's and the summary model's clients are made alike."""
    assert settings.anthropic_api_key is not None
    if base_url is None and settings.anthropic_base_url:
        base_url = str(settings.anthropic_base_url)
    return AnthropicClient(
        api_key=settings.anthropic_api_key.get_secret_value(),
        base_url=base_url.rstrip("/") if base_url else None,
        timeout_s=min(settings.agent.llm_timeout_s, settings.agent.llm_total_timeout_s),
        total_timeout_s=settings.agent.llm_total_timeout_s,
    )


def _make_summary_llm(settings: Settings, main: AnthropicClient) -> AnthropicClient:
    base = settings.auxiliary.compression.base_url
    return main if base is None else _make_llm(settings, str(base))


async def check_model_served(settings: Settings) -> LLMError | None:
    """Ask the API once whether it knows the configured models (the reply model, then the summary model
    at its endpoint): an unknown one stops the start-up with one line naming it and its setting (every
    message, or every compaction, would fail otherwise). An API that cannot be asked now does not stop
    it (messages are stored and answered once it is back): its error is returned."""
    llm = _make_llm(settings)
    summary_llm = _make_summary_llm(settings, llm)
    asked = [("model", settings.model, llm)]
    if (settings.summary_model, summary_llm) != (settings.model, llm):
        asked.append(("auxiliary.compression.model", settings.summary_model, summary_llm))
    try:
        for key, model, client in asked:
            await _look_up(client, key, model)
    except LLMError as exc:
        return exc
    finally:
        await llm.close()
        if summary_llm is not llm:
            await summary_llm.close()
    return None


async def _look_up(client: AnthropicClient, key: str, model: str) -> None:
    try:
        await client.look_up_model(model, timeout_s=MODEL_CHECK_TIMEOUT_S)
    except LLMNotFoundError as exc:
        raise ConfigError(
            f"{key}: the Anthropic API does not know model {model!r} (404 not_found_error); "
            f"check its spelling, or use a current model such as "
            f"{DEFAULT_MODEL if key == 'model' else DEFAULT_SUMMARY_MODEL}"
        ) from exc


def check_start_up(settings: Settings) -> None:
    """The checks before the database and the platforms are touched, each stopping the start-up with one
    line: the model the API serves first (a typo is named as such, not as a model missing from the
    table), then the models and the context engine; an API that could not be asked is logged after
    them, so a configuration error stays the only line."""
    unchecked = asyncio.run(check_model_served(settings))
    check_models(settings)
    context_engine(settings)
    if unchecked is not None:
        logger.warning("could not check model %s at start-up, starting anyway: %s", settings.model, unchecked)


def _wall_clock() -> datetime:
    """The one clock of the process: the store's timestamps and the gateway's parts read it."""
    return datetime.now(UTC)


def _fleet(settings: Settings) -> SoleWorker | PostgresLeases:
    """The leases this worker shares with the others on the same Postgres; alone on SQLite."""
    name = settings.fleet.worker_name
    return (
        PostgresLeases(settings.database_url, worker=name)
        if settings.is_postgres
        else SoleWorker(worker=name)
    )


async def _serve(
    settings: Settings,
    adapters: Sequence[PlatformAdapter],
    *,
    until: asyncio.Event | None = None,
    fleet: Fleet | None = None,
    registrations: WebhookRecords | None = None,
) -> int:
    stop = until or asyncio.Event()
    stop_on_signals(stop, settings.shutdown_timeout_s)
    try:
        await unless_stopped(ensure_schema(settings.database_url), stop)
        store = await unless_stopped(
            Store.open(
                settings.database_url,
                pool_size=settings.database_pool_size,
                max_overflow=settings.database_max_overflow,
                clock=_wall_clock,
            ),
            stop,
        )
    except StopRequested:
        return 0
    llm = _make_llm(settings)
    summary_llm = _make_summary_llm(settings, llm)
    gateway = Gateway(settings, adapters, store=store, llm=llm, summary_llm=summary_llm, clock=_wall_clock)
    if fleet is not None:
        gateway.metrics.track_leases(lambda: fleet.held)
    try:
        # A stop requested while starting (connecting, syncing, recovering) cancels the start.
        await unless_stopped(gateway.start(), stop)
        logger.info("gateway running; press Ctrl-C to stop")
        await stop.wait()
    except StopRequested:
        logger.info("start-up cancelled")
    finally:
        logger.info("stopping")
        budget = settings.shutdown_timeout_s - _CLOSE_TIMEOUT_S
        try:
            async with asyncio.timeout(budget):
                await gateway.stop()
        except TimeoutError:
            logger.error("stopping took longer than %.0fs; exiting anyway", budget)
        clients = [llm] if summary_llm is llm else [llm, summary_llm]
        closing = [*(c.close() for c in clients), store.close()]
        if isinstance(fleet, PostgresLeases):
            closing.append(fleet.close())  # hands the leases over at once rather than at exit
        if registrations is not None:
            closing.append(registrations.close())
        try:
            async with asyncio.timeout(_CLOSE_TIMEOUT_S):
                await asyncio.gather(*closing)
        except TimeoutError:
            logger.warning("closing the model clients and the database took too long; exiting anyway")
    return 0


def run(settings: Settings) -> int:
    if settings.anthropic_api_key is None:
        print(NO_KEY_HELP, file=sys.stderr)
        return 2
    check_start_up(settings)
    fleet = _fleet(settings)
    registrations = WebhookRecords(settings.database_url, clock=_wall_clock)
    adapters = build_adapters(settings, fleet, registrations)
    if not adapters:
        print(NO_PLATFORM_HELP, file=sys.stderr)
        for line in status_lines(settings):
            print("  " + line, file=sys.stderr)
        return 2
    return asyncio.run(_serve(settings, adapters, fleet=fleet, registrations=registrations))


def chat(settings: Settings, *, demo: bool = False) -> int:
    """The terminal chat; `demo`: answered by the fake model (`gateway.app.demo`), each reply labelled."""
    if settings.anthropic_api_key is None:
        print(NO_KEY_HELP, file=sys.stderr)
        return 2
    check_start_up(settings)
    from gateway.platforms.console.adapter import ConsoleAdapter

    async def main() -> int:
        console = ConsoleAdapter(demo=demo)
        done = asyncio.Event()

        async def watch() -> None:
            await console.finished.wait()
            done.set()

        watcher = asyncio.create_task(watch())
        try:
            return await _serve(settings, [console], until=done)
        finally:
            watcher.cancel()

    return asyncio.run(main())
