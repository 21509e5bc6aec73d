"""`gateway doctor`: what is configured, what will start, and whether the database and the Anthropic
endpoint answer. Secrets are reported as set / not set, never shown.
"""

from __future__ import annotations

import asyncio
import io
import logging
import wave
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TextIO

import anthropic
from pydantic import SecretStr
from sqlalchemy.engine import make_url

from agent.models import lookup_model
from agent.server_tools import pins_too_new
from agent.spending.periods import SpendFor
from gateway.app.wiring import caps_text, server_tools, spending_caps
from gateway.config import DEFAULT_PLANNED_WINDOW, Settings
from gateway.embeddings.setup import client_from
from gateway.errors import EmbeddingsError, StoreError, TranscriptionError
from gateway.jobs.maintenance import job_intervals
from gateway.jobs.reminders import reminders_every
from gateway.jobs.scheduler import interval_text
from gateway.platforms.catalog import status_lines
from gateway.store import Store
from gateway.store.jobs.runs import OVERDUE_INTERVALS, JobRunLog
from gateway.store.locks.leases import PostgresLeases
from gateway.store.migrate import current_revision_async, head_revision
from gateway.store.spend.ledger import LineTotal, SpendLedger
from gateway.store.webhooks.registrations import RegisteredWebhook, WebhookRecords
from gateway.transcription.transcriber import transcriber_from

if TYPE_CHECKING:
    from gateway.platforms.telegram.registration import WebhookState

logger = logging.getLogger(__name__)

DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    required: bool = True

    def line(self) -> str:
        mark = "ok" if self.ok else ("FAIL" if self.required else "warn")
        return f"[{mark:>4}] {self.name}: {self.detail}"


def _secret(value: SecretStr | None) -> str:
    return "set" if value is not None and value.get_secret_value() else "not set"


def configuration_lines(settings: Settings) -> list[str]:
    """The effective configuration, one `KEY value` line each, with secrets masked."""
    database = make_url(settings.database_url).render_as_string(hide_password=True)
    context = settings.planned_window or f"the model's window, at most {DEFAULT_PLANNED_WINDOW:,}"
    rows = [
        ("DATABASE_URL", database),
        ("MODEL", settings.model),
        ("CONTEXT__PLANNED_WINDOW", str(context)),
        ("SUMMARY MODEL", settings.summary_model),
        ("ANTHROPIC_API_KEY", _secret(settings.anthropic_api_key)),
        ("ANTHROPIC_BASE_URL", str(settings.anthropic_base_url or f"default ({DEFAULT_ANTHROPIC_URL})")),
        ("TELEGRAM_BOT_TOKEN", _secret(settings.telegram_bot_token)),
        ("TELEGRAM_BASE_URL", str(settings.telegram_base_url)),
        ("DISCORD_BOT_TOKEN", _secret(settings.discord_bot_token)),
        ("DISCORD_API_BASE_URL", str(settings.discord_api_base_url)),
        ("GATEWAY_ALLOW_ALL_USERS", str(settings.gateway_allow_all_users).lower()),
        (
            "ADMINS",
            f"telegram {len(settings.telegram_admin_ids)}, discord {len(settings.discord_admin_ids)}",
        ),
        (
            "COMPRESSION",
            f"enabled={settings.compression.enabled} threshold={settings.compression.threshold} "
            f"target_ratio={settings.compression.target_ratio} "
            f"protect_last_n={settings.compression.protect_last_n}",
        ),
        (
            "PROMPT_CACHING",
            f"enabled={settings.prompt_caching.enabled} cache_ttl={settings.prompt_caching.cache_ttl}",
        ),
        ("CONTEXT ENGINE", settings.context.engine),
        ("BUDGETS", caps_text(spending_caps(settings))),
        ("TRANSCRIPTION", _transcription_line(settings)),
        ("LOG_LEVEL", settings.log_level),
    ]
    width = max(len(key) for key, _ in rows)
    return [f"{key:<{width}}  {value}" for key, value in rows]


async def check_database(settings: Settings) -> Check:
    try:
        store = await Store.open(settings.database_url, pool_size=1, max_overflow=0)
        await store.close()
        current = await current_revision_async(settings.database_url)
    except StoreError as exc:
        return Check("database", False, f"does not answer ({exc})")
    head = head_revision()
    backend = make_url(settings.database_url).get_backend_name()
    if current != head:
        detail = f"answers ({backend}) but schema is at {current or 'nothing'}, head is {head}: "
        return Check("database", False, detail + "run `python -m gateway db upgrade`")
    return Check("database", True, f"answers ({backend}), schema at head {head}")


async def check_anthropic(settings: Settings, *, request_timeout: float = 5.0) -> Check:
    """One cheap GET (the configured model's metadata) to see that the endpoint answers and knows it."""
    if settings.anthropic_api_key is None:
        return Check("anthropic", False, "ANTHROPIC_API_KEY is not set")
    base_url = str(settings.anthropic_base_url) if settings.anthropic_base_url else DEFAULT_ANTHROPIC_URL
    client = anthropic.AsyncAnthropic(
        api_key=settings.anthropic_api_key.get_secret_value(),
        base_url=base_url,
        max_retries=0,
        timeout=request_timeout,
    )
    try:
        model = await client.models.retrieve(settings.model)
    except anthropic.AuthenticationError:
        return Check("anthropic", False, f"{base_url} rejected the API key (401)")
    except anthropic.NotFoundError:
        return Check("anthropic", False, f"{base_url} answers but does not know model {settings.model!r}")
    except anthropic.APIConnectionError as exc:  # includes timeouts
        return Check("anthropic", False, f"{base_url} unreachable ({type(exc).__name__})")
    except anthropic.APIStatusError as exc:
        return Check("anthropic", False, f"{base_url} answered HTTP {exc.status_code}")
    finally:
        await client.close()
    return Check("anthropic", True, f"{base_url} answers; model {model.id} available")


def check_platforms(settings: Settings) -> Check:
    names = settings.platforms_configured()
    if names:
        return Check("platforms", True, ", ".join(names) + " will start", required=False)
    return Check(
        "platforms",
        False,
        "no platform token set; `gateway run` will refuse to start (`gateway chat` works)",
        required=False,
    )


def _transcription_line(settings: Settings) -> str:
    t = settings.transcription
    if t.provider == "off":
        return "off (voice notes get a short reply saying the bot cannot listen)"
    return (
        f"{t.provider} model={t.model} base_url={t.base_url} api_key={_secret(t.api_key)} "
        f"max_duration_s={t.max_duration_s} max_file_mb={t.max_file_mb} timeout_s={t.timeout_s:g}"
    )


def silence_wav(seconds: float = 0.5, rate: int = 16_000) -> bytes:
    """A short silent 16-bit mono WAV: the smallest real audio every endpoint accepts."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(bytes(2 * int(rate * seconds)))
    return out.getvalue()


async def check_transcription(settings: Settings, *, request_timeout: float = 10.0) -> Check:
    """Transcribe half a second of silence: proves the endpoint answers, takes the key and knows the
    model (a real request, billed as half a second by hosted services)."""
    transcriber = transcriber_from(settings.transcription)
    if transcriber is None:
        return Check("transcription", True, "off: no endpoint to check", required=False)
    url = transcriber.client.url
    try:
        await transcriber.client.transcribe(
            silence_wav(), mime_type="audio/wav", filename="doctor.wav", timeout_s=request_timeout
        )
    except TranscriptionError as exc:
        return Check("transcription", False, f"{url}: {exc.reason} ({exc.cause})")
    finally:
        await transcriber.close()
    return Check("transcription", True, f"{url} answers; model {transcriber.model} transcribed a test clip")


async def check_embeddings(settings: Settings, *, request_timeout: float = 10.0) -> Check:
    """Embed one test query as recall would (its prefix, its deadline) and count the stored messages
    still waiting to be embedded."""
    config = settings.embeddings
    if config.provider == "off":
        return Check("embeddings", True, "off: recall ranks by keywords only", required=False)
    client = client_from(config)
    try:
        [vector] = await client.embed(
            ["what did we decide about the trip?"], kind="query", timeout_s=request_timeout
        )
    except EmbeddingsError as exc:
        return Check("embeddings", False, f"{client.url}: {exc}", required=False)
    finally:
        await client.close()
    prefixes = ", ".join(f"{kind} {prefix!r}" for kind, prefix in client.prefixes.items() if prefix)
    detail = f"{client.url} answers; {client.model} gave a {vector.shape[0]}-dimension vector"
    detail += f"; prefixes: {prefixes or 'none'}; input_type {'sent' if client.input_type else 'not sent'}"
    try:
        store = await Store.open(settings.database_url)
        try:
            mark = await store.embedding_watermark(client.model_key, backfill=config.backfill)
            waiting = await store.embedding_backlog(after_id=mark)
        finally:
            await store.close()
        detail += f"; {waiting:,} stored messages waiting to be embedded"
    except StoreError as exc:
        detail += f"; backlog not readable ({exc})"
    return Check("embeddings", True, detail, required=False)


async def check_fleet(settings: Settings) -> Check:
    """Who polls Telegram and who connects each Discord shard, read from the fleet's leases."""
    if not settings.is_postgres:
        return Check("fleet", True, "one worker (SQLite): it polls and connects every shard", required=False)
    shards = settings.discord.shard_count
    count = shards if isinstance(shards, int) else 0
    names = ["telegram:polling", *(f"discord:shard:{count}:{i}" for i in range(count))]
    observer = PostgresLeases(settings.database_url, worker="doctor", member=False)
    try:
        workers = await observer.live_workers()
        holders = await observer.holders(names)
    except StoreError as exc:
        return Check("fleet", False, f"leases not readable ({exc})", required=False)
    finally:
        await observer.close()
    parts = [f"{workers} worker(s) running", f"telegram polling: {holders.get(names[0], 'nobody')}"]
    if count:
        owners = ", ".join(f"{i}={holders.get(n, 'nobody')}" for i, n in enumerate(names[1:]))
        parts.append(f"discord shards: {owners}")
    elif shards == "auto":
        parts.append("discord shards: auto (count known to the running workers)")
    return Check("fleet", True, "; ".join(parts), required=False)


async def check_telegram_webhook(
    settings: Settings, *, request_timeout: float = 5.0, now: datetime | None = None
) -> Check | None:
    """In webhook mode: where Telegram sends updates, whether the registered secret is the configured
    one (from the fleet's record), and the last delivery error Telegram reports."""
    if settings.telegram_bot_token is None or settings.telegram_webhook_url is None:
        return None
    from telegram.error import TelegramError

    from gateway.platforms.telegram.registration import read_webhook, secret_hash

    token = settings.telegram_bot_token.get_secret_value()
    try:
        state = await read_webhook(
            token=token,
            base_url=str(settings.telegram_base_url),
            timeout_s=request_timeout,
            now=now or datetime.now(UTC),
        )
    except TelegramError as exc:
        detail = f"getWebhookInfo failed ({type(exc).__name__})"
        return Check("telegram webhook", False, detail, required=False)
    records = WebhookRecords(settings.database_url)
    try:
        recorded = await records.registered("telegram", state.bot_id)
    except StoreError:
        recorded = None
    finally:
        await records.close()
    secret = settings.telegram_webhook_secret
    wanted_hash = secret_hash(token, secret.get_secret_value() if secret else None)
    return _webhook_check(settings, state, recorded, wanted_hash, now or datetime.now(UTC))


def _webhook_check(
    settings: Settings,
    state: WebhookState,
    recorded: RegisteredWebhook | None,
    wanted_hash: str,
    now: datetime,
) -> Check:
    url = str(settings.telegram_webhook_url)
    problems = []
    if state.url != url:
        problems.append(f"Telegram sends updates to {state.url or 'nowhere'}, not {url}")
    elif recorded is None:
        problems.append("no registration recorded (its secret is unknown)")
    elif recorded.secret_hash != wanted_hash:
        problems.append("the registered secret is not TELEGRAM_WEBHOOK_SECRET: every update is refused (403)")
    if problems:
        problems.append("start or restart one worker to register it again")
    if state.trouble is not None:
        earlier = (
            recorded is not None
            and state.last_error_at is not None
            and state.last_error_at < recorded.registered_at
        )
        when = " (before the last registration)" if earlier else ""
        problems.append(f"Telegram reports a failed delivery{when}: {state.trouble}")
    if problems:
        return Check("telegram webhook", False, "; ".join(problems), required=False)
    assert recorded is not None
    detail = (
        f"Telegram sends updates to {url}, registered by {recorded.worker} "
        f"{_span(now - recorded.registered_at)} ago; no delivery error; {state.pending} pending"
    )
    return Check("telegram webhook", True, detail, required=False)


def scheduled_jobs(settings: Settings) -> dict[str, timedelta]:
    """The jobs a worker with these settings runs, and how often."""
    sched = settings.scheduler
    return job_intervals(
        idle=timedelta(minutes=sched.idle_minutes),
        retention_days=sched.archive_retention_days,
        keeps_alive=settings.prompt_caching.keeps_alive,
        answers_after_reset=settings.limits.answer_after_reset,
        reminders_every=reminders_every(settings),
    )


async def check_jobs(settings: Settings, *, now: datetime | None = None) -> list[Check]:
    """Each scheduled job with its last run across the fleet and its next one; overdue ones warn."""
    if not settings.scheduler.enabled:
        return [Check("jobs", True, "off (SCHEDULER__ENABLED=false): no background job runs", required=False)]
    at = now or datetime.now(UTC)
    try:
        store = await Store.open(settings.database_url, pool_size=1, max_overflow=0)
        try:
            runs = await JobRunLog(store, worker="doctor").all()
        finally:
            await store.close()
    except StoreError as exc:
        return [Check("jobs", False, f"job runs not readable ({exc})", required=False)]
    checks = []
    for name, every in scheduled_jobs(settings).items():
        run = runs.get(name)
        head = f"every {interval_text(every)}"
        if run is None:
            detail = f"{head}; no run recorded yet (the first comes one interval after a worker starts)"
            checks.append(Check(f"job {name}", True, detail, required=False))
            continue
        detail = (
            f"{head}; last run {_span(at - run.last_run_at)} ago ({run.last_result}, {run.worker}), "
            f"next due {_due(run.next_due - at)}; {run.runs} run(s)"
        )
        if run.overdue(at):
            last_ok = f"{_span(at - run.last_ok_at)} ago" if run.last_ok_at else "never"
            detail = (
                f"OVERDUE: no successful run for {OVERDUE_INTERVALS} intervals (last ok {last_ok}); " + detail
            )
            if run.last_error:
                detail += f"; last error: {run.last_error}"
        checks.append(Check(f"job {name}", not run.overdue(at), detail, required=False))
    return checks


def check_web_tools(settings: Settings) -> Check:
    """The API's web tools as every reply request will offer them: versions, limits and domain rules."""
    tools = server_tools(settings)
    if not tools.enabled:
        return Check("web tools", True, "off: the model cannot search the web or open pages", required=False)
    model = lookup_model(settings.model)
    too_new = pins_too_new(tools, model)
    if too_new:
        detail = "; ".join(
            f"{pinned} is newer than {model.name} takes ({newest})" for _, pinned, newest in too_new
        )
        return Check("web tools", False, detail + ": the API would refuse every request", required=False)
    parts = []
    for definition in tools.definitions(model):
        rules = [f"up to {definition['max_uses']} per request"]
        if "allowed_domains" in definition:
            rules.append("only " + ", ".join(definition["allowed_domains"]))
        if "blocked_domains" in definition:
            rules.append("never " + ", ".join(definition["blocked_domains"]))
        if "max_content_tokens" in definition:
            rules.append(f"pages cut at {definition['max_content_tokens']:,} tokens")
        parts.append(f"{definition['type']} ({'; '.join(rules)})")
    return Check("web tools", True, ", ".join(parts), required=False)


async def check_spend(settings: Settings, *, now: datetime | None = None) -> Check:
    """The bot's spend today and this month against its caps, and the calls in flight."""
    caps = spending_caps(settings)
    at = now or datetime.now(UTC)
    try:
        store = await Store.open(settings.database_url, pool_size=1, max_overflow=0)
        try:
            ledger = SpendLedger(store.engine, worker="doctor")
            limits = caps.limits(SpendFor(), at)
            totals = await ledger.totals((limit.scope, limit.period) for limit in limits)
            in_flight = await ledger.open_reservations()
        finally:
            await store.close()
    except StoreError as exc:
        return Check("spend", False, f"ledger not readable ({exc})", required=False)
    parts = []
    over = False
    for limit in limits:
        line = totals.get((limit.scope, limit.period), LineTotal(0.0, 0.0))
        label = "today" if limit.period_kind == "day" else "this month"
        parts.append(f"${line.spent_usd:.2f} of ${limit.cap_usd:.2f} {label}")
        over = over or line.exhausted or line.spent_usd + line.reserved_usd >= limit.cap_usd
    if not parts:
        detail = f"no bot-wide cap (LIMITS__BOT_*_BUDGET_USD); {in_flight} call(s) in flight"
        return Check("spend", True, detail, required=False)
    detail = f"the bot spent {', '.join(parts)}; {in_flight} call(s) in flight"
    return Check("spend", not over, ("SPENT: " if over else "") + detail, required=False)


def _span(delta: timedelta) -> str:
    seconds = max(0, round(delta.total_seconds()))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"


def _due(delta: timedelta) -> str:
    return "now" if delta.total_seconds() <= 0 else f"in {_span(delta)}"


async def run_checks(settings: Settings, *, request_timeout: float = 5.0) -> list[Check]:
    database, api, heard = await asyncio.gather(
        check_database(settings),
        check_anthropic(settings, request_timeout=request_timeout),
        check_transcription(settings, request_timeout=max(request_timeout, settings.transcription.timeout_s)),
    )
    checks = [database, api, check_platforms(settings), heard, check_web_tools(settings)]
    checks.append(await check_embeddings(settings, request_timeout=request_timeout))
    webhook = await check_telegram_webhook(settings, request_timeout=request_timeout)
    if webhook is not None:
        checks.append(webhook)
    if database.ok:
        checks.append(await check_fleet(settings))
        checks.extend(await check_jobs(settings))
        checks.append(await check_spend(settings))
    return checks


def doctor(settings: Settings, *, out: TextIO, request_timeout: float = 5.0) -> int:
    """Print the report; 0 when every required check passed, 1 otherwise."""
    print("Configuration", file=out)
    for line in configuration_lines(settings):
        print("  " + line, file=out)
    print("Platforms", file=out)
    for line in status_lines(settings):
        print("  " + line, file=out)
    print("Checks", file=out)
    checks = asyncio.run(run_checks(settings, request_timeout=request_timeout))
    for check in checks:
        print("  " + check.line(), file=out)
    failed = [c.name for c in checks if c.required and not c.ok]
    print(
        "Result: " + ("all required checks passed" if not failed else "broken: " + ", ".join(failed)),
        file=out,
    )
    return 1 if failed else 0
