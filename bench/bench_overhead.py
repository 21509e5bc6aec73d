"""Gateway overhead: from an update's arrival to the LLM request, with an instant in-process LLM, on
Postgres, for sessions with 10, 1,000 and 10,000 earlier messages (all but the newest 10 archived).

Run: `python -m bench.bench_overhead`. Each sample is one addressed private message delivered through
the in-memory adapter and answered to completion before the next; overhead is the `perf_counter` at the
LLM call minus the one at delivery. Targets: p99 <= 25 ms; p50 at 10,000 <= 1.3x p50 at 10.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time
from datetime import UTC, datetime

from bench.databases import DEFAULT_POSTGRES_URL, fresh_postgres
from bench.instant import InstantLLM
from bench.replay import bench_settings
from bench.seeding import seed_history
from gateway.app.gateway import Gateway
from gateway.store import Store
from tests.support.memory_adapter import DirectMemoryAdapter, chat_ref, incoming

SIZES = (10, 1_000, 10_000)
SAMPLES = 150
WARMUP = 10
P99_TARGET_MS = 25.0
P50_RATIO_TARGET = 1.3
_ids = itertools.count()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def measure(
    gateway: Gateway, adapter: DirectMemoryAdapter, llm: InstantLLM, chat_id: str, n: int
) -> list[float]:
    chat = chat_ref(chat_id, group=False)
    samples: list[float] = []
    for _ in range(n):
        i = next(_ids)
        message = incoming(
            chat, user_id=f"{chat_id}-u", name="Sam", text=f"question number {i} about the plan",
            message_id=f"{chat_id}-q{i}", sent_at=datetime.now(UTC),
        )  # fmt: skip
        calls = len(llm.requested_at)
        started = time.perf_counter()
        await adapter.deliver(message)
        await gateway.tasks.drain()
        if len(llm.requested_at) != calls + 1:
            raise RuntimeError(f"expected one LLM call for {message.platform_message_id}")
        samples.append((llm.requested_at[-1] - started) * 1000)
    return samples


async def run(*, pg_url: str = DEFAULT_POSTGRES_URL, samples: int = SAMPLES) -> dict[int, dict[str, float]]:
    results: dict[int, dict[str, float]] = {}
    async with fresh_postgres(pg_url) as url:
        settings = bench_settings(url, "http://127.0.0.1:9", scheduler={"enabled": False})
        store = await Store.open(
            url, pool_size=settings.database_pool_size, max_overflow=settings.database_max_overflow
        )
        llm = InstantLLM()
        adapter = DirectMemoryAdapter()
        gateway = Gateway(settings, [adapter], store=store, llm=llm)
        try:
            await gateway.start()
            for size in SIZES:
                chat_id = f"s{size}"
                chat = await store.get_or_create_chat("bench", chat_id, None, kind="private", title=None)
                session = await store.active_session(chat.id)
                await seed_history(store, session.id, size, keep_active=10)
            # Interleave the sizes so a slow moment of the machine hits all of them alike.
            per_size: dict[int, list[float]] = {size: [] for size in SIZES}
            for size in SIZES:
                await measure(gateway, adapter, llm, f"s{size}", WARMUP)
            rounds = 5
            for _ in range(rounds):
                for size in SIZES:
                    per_size[size] += await measure(gateway, adapter, llm, f"s{size}", samples // rounds)
        finally:
            await gateway.stop()
            await store.close()
    base = statistics.median(per_size[SIZES[0]])
    for size in SIZES:
        values = per_size[size]
        p50, p99 = statistics.median(values), percentile(values, 0.99)
        results[size] = {"p50_ms": p50, "p99_ms": p99, "p50_ratio": p50 / base, "samples": len(values)}
        print(
            f"overhead[{size:>6,} earlier messages] p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  "
            f"p50 vs 10: {p50 / base:4.2f}x  ({len(values)} samples)",
            flush=True,
        )
    print(f"targets: p99 <= {P99_TARGET_MS:.0f} ms; p50 at 10,000 <= {P50_RATIO_TARGET}x p50 at 10")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--samples", type=int, default=SAMPLES)
    args = parser.parse_args()
    asyncio.run(run(pg_url=args.postgres_url, samples=args.samples))


if __name__ == "__main__":
    main()
