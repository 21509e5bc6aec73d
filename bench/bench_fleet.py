"""Fleet sizing: 1 and 2 gateway processes on one Postgres behind a round-robin balancer (Telegram
webhook mode), under growing load, until p95 time to first visible text passes 2 s.

Each step runs `STEP_S` seconds with `chats` private chats, each sending one message every
`60 / PER_CHAT_PER_MIN` seconds (random phase). The fake model streams like a real one (first token after
0.8 s, then 60 tokens/s: the fake's default 16 tokens of thinking, then a reply echoing the ~80-token
message; "model first token" is its first text token). A message's time to first visible text runs
from its webhook POST to the chat's first draft or message after it. Reported per step: messages per
minute answered, p50/p95 first visible text, the most database connections seen (`pg_stat_activity`),
and where the time went (stored and acknowledged, waiting for the model request, model's first token,
first token to visible text). The load generator, the fakes and the balancer share the 2 cores.

Run: `python -m bench.bench_fleet` (about 5 minutes; `--workers 1` or `--max-chats` to shorten).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg  # type: ignore[import-untyped]
from aiohttp import web
from sqlalchemy.engine import make_url

from bench.databases import DEFAULT_POSTGRES_URL, fresh_postgres
from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic, Pacing
from tests.fakes.telegram import FakeTelegram
from tests.support.ports import free_port

TOKEN = "123456:FLEETBENCH-token-abcdefghijklmnopqrstuvwxyz"
SECRET = "fleet-bench-secret-0123456789"
FIRST_TOKEN_S = 0.8
TOKENS_PER_S = 60.0
STEP_S = 20.0
PER_CHAT_PER_MIN = 6.0
STEPS = (10, 20, 40, 80, 160, 320)
P95_LIMIT_S = 2.0
MARKER = re.compile(r"\bc\d+m\d+\b")
FILLER = " ".join(["words of an ordinary question someone might send to the assistant"] * 4)


class TimedTelegram(FakeTelegram):
    """The fake Telegram, noting when each chat showed text (a draft or a message)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.visible_at: dict[int, list[float]] = {}

    async def __aenter__(self) -> TimedTelegram:
        await super().__aenter__()
        return self

    def _seen(self, params: Any) -> None:
        self.visible_at.setdefault(self._chat_id(params), []).append(time.monotonic())

    async def _m_sendmessage(self, params: Any) -> dict[str, Any]:
        result = await super()._m_sendmessage(params)
        self._seen(params)
        return result

    async def _m_sendmessagedraft(self, params: Any) -> bool:
        result = await super()._m_sendmessagedraft(params)
        self._seen(params)
        return result


class Balancer:
    """Round-robin HTTP forwarding of webhook POSTs to the workers (what nginx or a cloud LB does)."""

    def __init__(self, targets: list[str]) -> None:
        self._targets = itertools.cycle(targets)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = free_port()

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        app = web.Application()
        app.router.add_post("/tg-hook", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._session is not None
        body = await request.read()
        headers = {
            k: v for k, v in request.headers.items() if k.lower().startswith(("x-telegram", "content-type"))
        }
        async with self._session.post(next(self._targets), data=body, headers=headers) as resp:
            return web.Response(status=resp.status, body=await resp.read())


@dataclass
class Sample:
    chat: int
    marker: str
    posted: float
    acked: float = 0.0
    status: int = 0


@dataclass
class StepResult:
    workers: int
    chats: int
    sent: int
    answered: int
    per_min: float
    p50_s: float
    p95_s: float
    db_connections: int
    parts: dict[str, float] = field(default_factory=dict)

    def line(self) -> str:
        parts = ", ".join(f"{k} {v:.2f}" for k, v in self.parts.items())
        return (
            f"  {self.workers} worker(s) {self.chats:4d} chats ({self.chats / self.workers:.0f}/worker): "
            f"{self.per_min:6.0f} msg/min answered, first text p50 {self.p50_s:.2f} s "
            f"p95 {self.p95_s:.2f} s, "
            f"db connections {self.db_connections}; median s: {parts}"
        )


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("inf")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _db_connections(url: str, stop: asyncio.Event) -> int:
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(dsn)
    most = 0
    try:
        while not stop.is_set():
            count = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            most = max(most, int(count))
            await asyncio.sleep(0.5)
    finally:
        await conn.close()
    return most


async def _step(
    *, workers: int, chats: int, url: str, tg: TimedTelegram, llm: FakeAnthropic, base_chat: int, hook: str
) -> StepResult:
    period = 60.0 / PER_CHAT_PER_MIN
    samples: list[Sample] = []
    counter = itertools.count()
    stop = asyncio.Event()
    watcher = asyncio.create_task(_db_connections(url, stop))
    started = time.monotonic()

    async def chat_loop(chat: int) -> None:
        await asyncio.sleep(random.uniform(0, period))
        while time.monotonic() - started < STEP_S:
            marker = f"c{chat}m{next(counter)}"
            update = tg.push_message(chat, f"{marker} {FILLER}", user_id=chat)
            sample = Sample(chat, marker, time.monotonic())
            samples.append(sample)
            sample.status = await tg.deliver_webhook(hook, update, SECRET)
            sample.acked = time.monotonic()
            await asyncio.sleep(max(0.0, sample.posted + period - time.monotonic()))

    await asyncio.gather(*(chat_loop(base_chat + i) for i in range(chats)))
    await asyncio.sleep(P95_LIMIT_S * 3)  # let the last replies show
    stop.set()
    most_connections = await watcher
    requested = _model_requests(llm)
    firsts: list[float] = []
    parts: dict[str, list[float]] = {"stored": [], "to model": [], "model first token": [], "to visible": []}
    for s in samples:
        seen = [t for t in tg.visible_at.get(s.chat, []) if t >= s.posted]
        if not seen or s.status != 200:
            firsts.append(float("inf"))
            continue
        firsts.append(seen[0] - s.posted)
        parts["stored"].append(s.acked - s.posted)
        request = requested.get(s.marker)
        if request is not None:
            asked, thinking = request
            model = FIRST_TOKEN_S + thinking  # the model's first text token
            parts["to model"].append(max(0.0, asked - s.acked))
            parts["model first token"].append(model)
            parts["to visible"].append(max(0.0, seen[0] - asked - model))
    answered = sum(1 for f in firsts if f != float("inf"))
    return StepResult(
        workers=workers,
        chats=chats,
        sent=len(samples),
        answered=answered,
        per_min=answered / STEP_S * 60.0,
        p50_s=_percentile(firsts, 0.50),
        p95_s=_percentile(firsts, 0.95),
        db_connections=most_connections,
        parts={k: statistics.median(v) if v else 0.0 for k, v in parts.items()},
    )


def _model_requests(llm: FakeAnthropic) -> dict[str, tuple[float, float]]:
    """When the reply request of each message reached the model (by its marker), first one only, and
    how long the model thought before its first text token."""
    seen: dict[str, tuple[float, float]] = {}
    for record in llm.requests:
        body = json.dumps(record.body)
        thinking = record.paced.thinking_s if record.paced is not None else 0.0
        for marker in set(MARKER.findall(body)):
            seen.setdefault(marker, (record.at, thinking))
    return seen


async def run_fleet(workers: int, *, pg_url: str, max_chats: int) -> list[StepResult]:
    results: list[StepResult] = []
    async with (
        fresh_postgres(pg_url) as url,
        FakeAnthropic(pacing=Pacing(first_token_s=FIRST_TOKEN_S, tokens_per_s=TOKENS_PER_S)) as llm,
        TimedTelegram(token=TOKEN) as tg,
    ):
        ports = [free_port() for _ in range(workers)]
        balancer = Balancer([f"http://127.0.0.1:{p}/tg-hook" for p in ports])
        await balancer.start()
        hook = f"http://127.0.0.1:{balancer.port}/tg-hook"
        with tempfile.TemporaryDirectory() as tmp:
            procs = []
            for i, port in enumerate(ports):
                cwd = Path(tmp) / f"w{i}"
                cwd.mkdir()
                env = base_env(
                    database_url=url, anthropic_url=llm.base_url, tmp=cwd,
                    TELEGRAM_BOT_TOKEN=TOKEN, TELEGRAM_BASE_URL=tg.base_url, TELEGRAM_WEBHOOK_URL=hook,
                    TELEGRAM_WEBHOOK_LISTEN="127.0.0.1", TELEGRAM_WEBHOOK_PORT=str(port),
                    TELEGRAM_WEBHOOK_SECRET=SECRET, GATEWAY_ALLOW_ALL_USERS="true",
                    LIMITS__USER_MESSAGES_PER_MINUTE="10000", FLEET__WORKER_NAME=f"w{i}",
                )  # fmt: skip
                procs.append(GatewayProcess(env, cwd=cwd))
            try:
                await asyncio.gather(*(p.start() for p in procs))
                base_chat = 10_000
                for chats in (c for c in STEPS if c <= max_chats):
                    result = await _step(
                        workers=workers, chats=chats, url=url, tg=tg, llm=llm, base_chat=base_chat, hook=hook
                    )
                    base_chat += chats
                    print(result.line(), flush=True)
                    results.append(result)
                    if result.p95_s > P95_LIMIT_S:
                        break
            finally:
                await asyncio.gather(*(p.stop() for p in procs))
                await balancer.stop()
    return results


def sustained(results: list[StepResult]) -> StepResult | None:
    """The largest step whose p95 stayed within the limit."""
    passing = [r for r in results if r.p95_s <= P95_LIMIT_S]
    return passing[-1] if passing else None


async def run(
    *, pg_url: str = DEFAULT_POSTGRES_URL, workers: tuple[int, ...] = (1, 2), max_chats: int = 320
) -> None:
    random.seed(2026)
    print(
        f"fleet: steps of {STEP_S:.0f} s, {PER_CHAT_PER_MIN:.0f} msg/min per chat, model first token "
        f"{FIRST_TOKEN_S} s then {TOKENS_PER_S:.0f} tok/s; stop when p95 first text > {P95_LIMIT_S} s",
        flush=True,
    )
    for n in workers:
        best = sustained(await run_fleet(n, pg_url=pg_url, max_chats=max_chats))
        if best is None:
            print(f"fleet: {n} worker(s): even the first step passed p95 {P95_LIMIT_S} s", flush=True)
        else:
            print(
                f"fleet: {n} worker(s) sustain {best.per_min:.0f} msg/min, {best.chats / n:.0f} active chats "
                f"per worker, p95 {best.p95_s:.2f} s, {best.db_connections} db connections",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--workers", default="1,2", help="comma-separated fleet sizes")
    parser.add_argument("--max-chats", type=int, default=320)
    args = parser.parse_args()
    sizes = tuple(int(n) for n in args.workers.split(","))
    asyncio.run(run(pg_url=args.postgres_url, workers=sizes, max_chats=args.max_chats))


if __name__ == "__main__":
    main()
