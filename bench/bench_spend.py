"""Spending caps: what the reservation costs on the message path, and how far a cap can be passed.

Run: `python -m bench.bench_spend`.

1. Overhead (Postgres, as `bench_overhead`): update arrival -> the model request, with the budget on (a
   chat, a user and a bot-wide cap: the admission check, then the call's hold on three lines before it
   is sent) and off (the same gateway with both taken out), interleaved round by round so a slow moment
   of the machine hits both alike; and one whole turn (the settlement after the answer included).
2. Overshoot (Postgres): worker processes' worth of ledgers (one engine each) reserving at once against
   one bot-wide cap, each call's bill drawn at random below its worst case, one call in ten lost in
   transit (counted at its worst case); the spend against the cap, over several seeds. Target: never
   above the cap.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from datetime import UTC, datetime

from agent.spending.periods import Caps, SpendFor
from bench.bench_overhead import measure, percentile
from bench.databases import DEFAULT_POSTGRES_URL, fresh_postgres
from bench.instant import InstantLLM
from bench.replay import bench_settings
from gateway.app.gateway import Gateway
from gateway.spending.budget import SpendingClient
from gateway.store import Store
from gateway.store.spend.ledger import Refused, SpendLedger
from tests.support.memory_adapter import DirectMemoryAdapter

SAMPLES = 150
ROUNDS = 6
WORKERS = 4
CALLS = 150
SEEDS = 5
CAP = 1.0


def _budget_on(gateway: Gateway, spending: SpendingClient, on: bool) -> None:
    gateway.pipeline.admission.budget = gateway.budget if on else None
    gateway.turns.llm = spending if on else spending.inner


async def overhead(pg_url: str, samples: int) -> dict[str, float]:
    async with fresh_postgres(pg_url) as url:
        caps = {"chat_daily_budget_usd": 1000.0, "user_daily_budget_usd": 1000.0, "bot_daily_budget_usd": 1e6}
        settings = bench_settings(
            url,
            "http://127.0.0.1:9",
            scheduler={"enabled": False},
            limits={"user_messages_per_minute": 1_000_000, **caps},
        )
        store = await Store.open(url)
        llm = InstantLLM()
        adapter = DirectMemoryAdapter()
        gateway = Gateway(settings, [adapter], store=store, llm=llm)
        spending = gateway.turns.llm
        assert isinstance(spending, SpendingClient)
        runs: dict[bool, list[float]] = {True: [], False: []}
        turns: dict[bool, list[float]] = {True: [], False: []}
        try:
            await gateway.start()
            for on in (True, False):
                _budget_on(gateway, spending, on)
                await measure(gateway, adapter, llm, "warm", 10)
            for _ in range(ROUNDS):
                for on in (True, False):
                    _budget_on(gateway, spending, on)
                    started = time.perf_counter()
                    runs[on] += await measure(gateway, adapter, llm, f"chat-{on}", samples // ROUNDS)
                    turns[on].append((time.perf_counter() - started) * 1000 / (samples // ROUNDS))
        finally:
            await gateway.stop()
            await store.close()
    figures: dict[str, float] = {}
    for on in (True, False):
        label = "on " if on else "off"
        p50, p99 = statistics.median(runs[on]), percentile(runs[on], 0.99)
        turn = statistics.median(turns[on])
        figures[f"p50_{label.strip()}"], figures[f"p99_{label.strip()}"] = p50, p99
        figures[f"turn_{label.strip()}"] = turn
        print(
            f"overhead, budget {label}: p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  whole turn {turn:6.2f} ms",
            flush=True,
        )
    extra = figures["p50_on"] - figures["p50_off"]
    turn_extra = figures["turn_on"] - figures["turn_off"]
    print(f"the budget adds {extra:+.2f} ms to the p50 overhead, {turn_extra:+.2f} ms to a turn")
    return figures


async def _worker(url: str, name: str, seed: int, billed: list[float]) -> None:
    store = await Store.open(url)
    ledger = SpendLedger(store.engine, worker=name)
    rng = random.Random(f"{seed}-{name}")
    caps = Caps(bot_day=CAP)
    try:
        for _ in range(CALLS):
            worst = rng.uniform(0.005, 0.05)
            held = await ledger.reserve(
                caps.limits(SpendFor(chat_pk=rng.randint(1, 50)), datetime.now(UTC)), worst, purpose="bench"
            )
            if isinstance(held, Refused):
                continue
            await asyncio.sleep(rng.uniform(0, 0.002))  # the call
            if rng.random() < 0.1:  # lost in transit: billed or not, it counts at its worst case
                bill = worst if rng.random() < 0.5 else 0.0
                await ledger.settle(held, worst)
            else:
                bill = worst * rng.uniform(0.05, 1.0)
                await ledger.settle(held, bill)
            billed.append(bill)
    finally:
        await store.close()


async def overshoot(pg_url: str) -> float:
    worst = 0.0
    for seed in range(SEEDS):
        async with fresh_postgres(pg_url, durable=False) as url:
            billed: list[float] = []
            await asyncio.gather(*(_worker(url, f"w{i}", seed, billed) for i in range(WORKERS)))
            share = sum(billed) / CAP
            worst = max(worst, share)
            total = sum(billed)
            print(
                f"overshoot seed {seed}: billed {total:.4f} of {CAP:.2f} ({share:.1%}), {len(billed)} calls"
            )
    print(f"worst: {worst:.1%} of the cap (target: at most 100%)")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--samples", type=int, default=SAMPLES)
    args = parser.parse_args()
    asyncio.run(overhead(args.postgres_url, args.samples))
    asyncio.run(overshoot(args.postgres_url))


if __name__ == "__main__":
    main()
