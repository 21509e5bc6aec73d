"""Prometheus metrics (the only module importing prometheus-client) and the HTTP server for /metrics and
/healthz, which runs only when `observability.metrics_port` is set.

Each `Metrics` owns its registry, so several gateways (tests, benchmarks) in one process never clash.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from agent.caching.waste import CacheWaste
from agent.llm import LLMClient, LLMRequest, LLMResponse, ask
from agent.streaming import TextSink
from agent.usage import Usage
from gateway.http_site import LocalSite
from gateway.platforms.base import ChatRef, PlatformAdapter, WebhookReceiver

logger = logging.getLogger(__name__)

TOKEN_KINDS = ("input", "cache_read", "cache_write", "output")
LATENCY_BUCKETS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)
OVERHEAD_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
HEALTH_TIMEOUT_S = 3.0

ChatKey = tuple[str, str, str | None]
"""(platform, chat_id, thread_id): the unit a turn answers."""


@dataclass
class _Arrivals:
    """perf_counter of the newest update per chat not yet followed by an LLM request.

    The newest, not the oldest: a group message the bot was not asked about must not count as waiting.
    """

    first: dict[ChatKey, float] = field(default_factory=dict)

    def mark(self, key: ChatKey, at: float | None = None) -> None:
        self.first[key] = time.perf_counter() if at is None else at

    def take(self, key: ChatKey) -> float | None:
        return self.first.pop(key, None)


WASTE_KINDS = ("unread_write", "expired_resend")


class Metrics:
    """The gateway's counters, gauges and histograms, and the observation methods that feed them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._model_metrics(self.registry)
        self._turn_metrics(self.registry)
        self._cache_metrics(self.registry)
        self._delivery_metrics(self.registry)
        self._spend_metrics(self.registry)
        self._reminder_metrics(self.registry)
        self.arrivals = _Arrivals()
        self._prompt_tokens = (0, 0)
        """(cache-read, all prompt) tokens since start, for the hit ratio."""

    def _model_metrics(self, r: CollectorRegistry) -> None:
        self.tokens = Counter(
            "gateway_llm_tokens", "LLM tokens by kind (input = uncached input)", ["kind"], registry=r
        )
        for kind in TOKEN_KINDS:
            self.tokens.labels(kind=kind)
        self.llm_calls = Counter("gateway_llm_calls", "LLM requests by purpose", ["purpose"], registry=r)
        self.web_lookups = Counter(
            "gateway_web_lookups",
            "Web searches and page fetches the API ran inside model calls (searches are billed per 1,000)",
            ["kind"],
            registry=r,
        )
        for kind in ("search", "fetch"):
            self.web_lookups.labels(kind=kind)
        self.refusals = Counter(
            "gateway_llm_refusals",
            "Replies the model declined (stop_reason refusal), by category",
            ["category"],
            registry=r,
        )
        self.thinking_dropped = Counter(
            "gateway_thinking_blocks_dropped",
            "Thinking blocks left out of a request because the conversation before them changed: by the "
            "gateway (the normal path after an edit), or by the API's drop_block safety net (a binding the "
            "gateway got wrong)",
            ["by"],
            registry=r,
        )

    def _turn_metrics(self, r: CollectorRegistry) -> None:
        self.compactions = Counter(
            "gateway_compactions", "Compactions by trigger and outcome", ["trigger", "outcome"], registry=r
        )
        self.turn_seconds = Histogram(
            "gateway_turn_seconds", "Wall time of one turn (lock held)", buckets=LATENCY_BUCKETS, registry=r
        )
        self.overhead_seconds = Histogram(
            "gateway_overhead_seconds",
            "Arrival of the newest update of a chat to its turn's first LLM request",
            buckets=OVERHEAD_BUCKETS,
            registry=r,
        )
        self.messages_stored = Counter("gateway_messages_stored", "Messages stored", ["role"], registry=r)
        self.spool_depth = Gauge("gateway_spool_depth", "Updates waiting in the spool", registry=r)
        self.job_runs = Counter(
            "gateway_job_runs", "Scheduled job runs by result", ["job", "result"], registry=r
        )

    def _spend_metrics(self, r: CollectorRegistry) -> None:
        self.spend = Counter(
            "gateway_spend_usd",
            "USD of model calls by event (held: reserved before a call; settled: billed, or a lost answer "
            "at its worst case; released: refused by the API, not billed; refused: not sent, over a cap) "
            "and kind of budget counted toward (bot, chat, user; for refused: the one that refused it)",
            ["event", "scope"],
            registry=r,
        )
        self.spend_held = Gauge(
            "gateway_spend_held_usd", "USD this worker holds for its model calls in flight", registry=r
        )
        for event in ("held", "settled", "released", "refused"):
            for scope in ("bot", "chat", "user"):
                self.spend.labels(event=event, scope=scope)

    def observe_spend(self, event: str, scope: str, usd: float) -> None:
        """One budget event (`gateway.spending.budget`); "holding" and "unheld" move what is held."""
        if event == "holding":
            self.spend_held.inc(usd)
        elif event == "unheld":
            self.spend_held.dec(usd)
        else:
            self.spend.labels(event=event, scope=scope).inc(max(0.0, usd))

    def _cache_metrics(self, r: CollectorRegistry) -> None:
        self.cache_hit_ratio = Gauge(
            "gateway_cache_hit_ratio",
            "Share of prompt tokens read from the prompt cache since start",
            registry=r,
        )
        self.cache_hit_ratio.set_function(self._hit_ratio)
        self.cache_waste = Counter(
            "gateway_cache_waste_usd",
            "USD the prompt cache wasted: writes never read, prefixes re-sent just after they expired",
            ["kind"],
            registry=r,
        )
        for kind in WASTE_KINDS:
            self.cache_waste.labels(kind=kind)
        self.keepalive = Counter(
            "gateway_cache_keepalive",
            "Prompt-cache keep-alive refreshes by result (read: the entry lives on; missed: it read nothing; "
            "error: the call failed)",
            ["result"],
            registry=r,
        )

    def _delivery_metrics(self, r: CollectorRegistry) -> None:
        self.reply_parts = Counter(
            "gateway_reply_parts",
            "Reply parts by delivery outcome (sent, retried: a transient failure, failed: given up)",
            ["outcome"],
            registry=r,
        )
        for outcome in ("sent", "retried", "failed"):
            self.reply_parts.labels(outcome=outcome)
        self.transcriptions = Counter(
            "gateway_transcriptions",
            "Voice notes sent for transcription by outcome (ok, or the cause of the failure: timeout, "
            "unreachable, auth, too_long, too_large, rejected, failed, malformed, download)",
            ["outcome"],
            registry=r,
        )
        self.transcriptions.labels(outcome="ok")
        self.transcription_seconds = Histogram(
            "gateway_transcription_seconds",
            "Wall time of one transcription request",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )

    def _reminder_metrics(self, r: CollectorRegistry) -> None:
        self.reminders = Counter(
            "gateway_reminders",
            "Reminder occurrences by outcome (due, delivered, missed, failed, retried)",
            ["outcome"],
            registry=r,
        )
        for outcome in ("due", "delivered", "missed", "failed"):
            self.reminders.labels(outcome=outcome)
        self.reminder_late_seconds = Histogram(
            "gateway_reminder_late_seconds",
            "How long after its due time a reminder was sent",
            buckets=(1, 2, 5, 10, 30, 60, 300, 3600, 86400),
            registry=r,
        )

    def observe_reminder(self, outcome: str, late_s: float | None = None) -> None:
        self.reminders.labels(outcome=outcome).inc()
        if late_s is not None:
            self.reminder_late_seconds.observe(max(0.0, late_s))

    def _hit_ratio(self) -> float:
        read, prompt = self._prompt_tokens
        return read / prompt if prompt else 0.0

    # -- observations -------------------------------------------------------------------------------

    def observe_usage(self, usage: Usage, *, purpose: str) -> None:
        self.llm_calls.labels(purpose=purpose).inc()
        self.tokens.labels(kind="input").inc(usage.input_tokens)
        self.tokens.labels(kind="cache_read").inc(usage.cache_read_input_tokens)
        self.tokens.labels(kind="cache_write").inc(usage.cache_creation_input_tokens)
        self.tokens.labels(kind="output").inc(usage.output_tokens)
        self.web_lookups.labels(kind="search").inc(usage.web_search_requests)
        self.web_lookups.labels(kind="fetch").inc(usage.web_fetch_requests)
        read, prompt = self._prompt_tokens
        self._prompt_tokens = (read + usage.cache_read_input_tokens, prompt + usage.prompt_tokens)

    def observe_call_outcome(self, refusal: str | None, *, left_out: int, dropped_by_api: int) -> None:
        if refusal is not None:
            self.refusals.labels(category=refusal).inc()
        if left_out:
            self.thinking_dropped.labels(by="gateway").inc(left_out)
        if dropped_by_api:
            self.thinking_dropped.labels(by="api").inc(dropped_by_api)

    def observe_keepalive(self, result: str) -> None:
        self.keepalive.labels(result=result).inc()

    def observe_cache_waste(self, waste: CacheWaste) -> None:
        """Waste judged when a call follows the previous one (`agent.caching.waste.between`)."""
        self.cache_waste.labels(kind="unread_write").inc(waste.unread_write_usd)
        self.cache_waste.labels(kind="expired_resend").inc(waste.expired_resend_usd)

    def observe_compaction(self, trigger: str, outcome: str) -> None:
        self.compactions.labels(trigger=trigger, outcome=outcome).inc()

    def observe_turn(self, seconds: float) -> None:
        self.turn_seconds.observe(seconds)

    def observe_overhead(self, key: ChatKey, *, now: float | None = None) -> None:
        """At a turn's first LLM request: the time since the oldest update it answers arrived."""
        arrived = self.arrivals.take(key)
        if arrived is not None:
            self.overhead_seconds.observe(max(0.0, (time.perf_counter() if now is None else now) - arrived))

    def message_stored(self, role: str, count: int = 1) -> None:
        self.messages_stored.labels(role=role).inc(count)

    def observe_delivery(self, outcome: str) -> None:
        self.reply_parts.labels(outcome=outcome).inc()

    def observe_transcription(self, outcome: str, seconds: float | None) -> None:
        """One voice note: "ok" or the failure's cause; `seconds` when a request was made."""
        self.transcriptions.labels(outcome=outcome).inc()
        if seconds is not None:
            self.transcription_seconds.observe(seconds)

    def observe_job(self, job: str, result: str) -> None:
        self.job_runs.labels(job=job, result=result).inc()

    def track_jobs(self, names: list[str], overdue: Callable[[], list[str]]) -> None:
        """`gateway_job_overdue{job}`: 1 for a job that has not run for three of its intervals, else 0."""
        self.registry.register(_JobCollector(names, overdue))

    def track_leases(self, held: Callable[[], frozenset[str]]) -> None:
        """`gateway_fleet_lease_held{lease}`: 1 for each lease this worker holds (who polls, which shards)."""
        self.registry.register(_LeaseCollector(held))

    def track_webhooks(self, adapters: Iterable[PlatformAdapter]) -> None:
        """`gateway_webhook_refused_total{platform}`: webhook requests refused for a wrong or missing
        secret token."""
        receivers = [a for a in adapters if isinstance(a, WebhookReceiver)]
        if receivers:
            self.registry.register(_RefusalCollector(receivers))

    def track_spool(self, depth: Callable[[], int]) -> None:
        """Report the spool's depth at every scrape."""
        self.spool_depth.set_function(lambda: float(depth()))

    def track_semantic_recall(self, gauges: Callable[[], tuple[bool, int, dict[str, int]]]) -> None:
        """`gateway_embeddings_breaker_open`, `gateway_embeddings_backlog` and
        `gateway_recall_semantic_queries_total{outcome}`, read at every scrape."""
        self.registry.register(_SemanticCollector(gauges))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


Ping = Callable[[], Awaitable[None]]


class _SemanticCollector(Collector):
    def __init__(self, gauges: Callable[[], tuple[bool, int, dict[str, int]]]) -> None:
        self._gauges = gauges

    def collect(self) -> Iterator[Metric]:
        open_, backlog, outcomes = self._gauges()
        yield GaugeMetricFamily(
            "gateway_embeddings_breaker_open",
            "1 while query embedding is paused after repeated failures",
            value=float(open_),
        )
        yield GaugeMetricFamily(
            "gateway_embeddings_backlog", "Stored messages waiting to be embedded", value=float(backlog)
        )
        family = CounterMetricFamily(
            "gateway_recall_semantic_queries",
            "Recall queries by what their semantic side did (ranked, timeout, error, skipped)",
            labels=["outcome"],
        )
        for outcome, count in outcomes.items():
            family.add_metric([outcome], float(count))
        yield family


class _LeaseCollector(Collector):
    """The fleet leases this worker holds, read when scraped."""

    def __init__(self, held: Callable[[], frozenset[str]]) -> None:
        self._held = held

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "gateway_fleet_lease_held",
            "1 for each fleet lease this worker holds (telegram:polling, discord:shard:<count>:<id>)",
            labels=["lease"],
        )
        for name in sorted(self._held()):
            family.add_metric([name], 1.0)
        yield family


class _RefusalCollector(Collector):
    """Webhook requests each adapter refused for a missing or wrong secret, read when scraped."""

    def __init__(self, receivers: list[WebhookReceiver]) -> None:
        self._receivers = receivers

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "gateway_webhook_refused",
            "Webhook requests refused (403) for a missing or wrong secret token: from the platform, the "
            "secret it was registered with is not the configured one",
            labels=["platform"],
        )
        for receiver in self._receivers:
            family.add_metric([receiver.name], float(receiver.refused_deliveries))
        yield family


class _JobCollector(Collector):
    """Which scheduled jobs are overdue on this worker, read when scraped."""

    def __init__(self, names: list[str], overdue: Callable[[], list[str]]) -> None:
        self._names = names
        self._overdue = overdue

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "gateway_job_overdue",
            "1 for a scheduled job that has not run for three of its intervals",
            labels=["job"],
        )
        late = set(self._overdue())
        for name in self._names:
            family.add_metric([name], 1.0 if name in late else 0.0)
        yield family


class TimedLLM:
    """Observes the gateway overhead (update arrival -> LLM request) at a turn's first request."""

    def __init__(self, llm: LLMClient, metrics: Metrics, key: ChatKey) -> None:
        self._llm = llm
        self._metrics = metrics
        self._key: ChatKey | None = key

    @classmethod
    def for_chat(cls, llm: LLMClient, metrics: Metrics | None, chat: ChatRef) -> LLMClient:
        if metrics is None:
            return llm
        return cls(llm, metrics, (chat.platform, chat.chat_id, chat.thread_id))

    async def create(self, request: LLMRequest) -> LLMResponse:
        return await self.stream_or_create(request, None)

    async def stream(
        self, request: LLMRequest, on_text: TextSink, on_progress: TextSink | None = None
    ) -> LLMResponse:
        return await self.stream_or_create(request, on_text, on_progress)

    async def stream_or_create(
        self, request: LLMRequest, on_text: TextSink | None, on_progress: TextSink | None = None
    ) -> LLMResponse:
        if self._key is not None:
            self._metrics.observe_overhead(self._key)
            self._key = None
        return await ask(self._llm, request, on_text, on_progress)


class MetricsServer:
    """aiohttp server: GET /metrics (Prometheus text format), GET /healthz (200 when the DB answers)."""

    def __init__(self, metrics: Metrics, ping: Ping, *, host: str, port: int) -> None:
        self._metrics = metrics
        self._ping = ping
        self._site = LocalSite(host, port)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._serve_metrics)
        app.router.add_get("/healthz", self._serve_health)
        await self._site.serve(app)
        logger.info("metrics and health on http://%s:%d (/metrics, /healthz)", self._site.host, self.port)

    @property
    def port(self) -> int:
        """The bound port (useful when started with port 0)."""
        return self._site.port

    async def stop(self) -> None:
        await self._site.stop()

    async def _serve_metrics(self, _request: web.Request) -> web.Response:
        body = self._metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _serve_health(self, _request: web.Request) -> web.Response:
        try:
            await asyncio.wait_for(self._ping(), timeout=HEALTH_TIMEOUT_S)
        except Exception as exc:  # any failure to answer means "not healthy"; the probe reports why
            logger.warning("health check failed: %s: %s", type(exc).__name__, exc)
            return _json(503, {"status": "unavailable", "error": type(exc).__name__})
        return _json(200, {"status": "ok"})


def _json(status: int, payload: dict[str, str]) -> web.Response:
    return web.Response(status=status, text=json.dumps(payload), content_type="application/json")
