"""`make bench` / `python -m bench`: every benchmark in one run, printing medians and ratios.

Sizes are chosen so the whole run stays under ten minutes on a 2-core machine: the cost traces are a few
chats over two to four simulated days, the overhead benchmark takes 150 samples per session size, the
throughput benchmark sends 500 chats x 10 messages; the cost benchmark's replays run one per core
(`bench_cost --workers`). Each stage prints its time. Postgres must answer on 127.0.0.1:5432 (a fresh
database is created and dropped per benchmark; `--postgres-url` to change the server).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import platform
import time
from collections.abc import Awaitable, Callable

from bench import (
    bench_cache_policy,
    bench_compressor,
    bench_cost,
    bench_fidelity,
    bench_latency,
    bench_media,
    bench_morning,
    bench_overhead,
    bench_recall,
    bench_summary_mode,
    bench_throughput,
    bench_voice,
)
from bench.databases import DEFAULT_POSTGRES_URL
from bench.traces import TraceSizes

COST_SIZES = TraceSizes()
"""The cost benchmark's full size (3 private chats x 3 days, 2 groups x 3 days, 2 tool sessions x 1 day,
4 one-to-one help chats x 2 days, 4 long groups x 2 days)."""


async def _async_part(pg_url: str) -> None:
    stages: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("overhead", lambda: bench_overhead.run(pg_url=pg_url)),
        ("throughput", lambda: bench_throughput.run(pg_url=pg_url)),
        ("morning", lambda: bench_morning.run(pg_url=pg_url)),
        ("cost", lambda: bench_cost.run(sizes=COST_SIZES, pg_url=pg_url)),
        ("recall", lambda: bench_recall.run(pg_url=pg_url)),
        ("media", lambda: bench_media.run(pg_url=pg_url)),
        ("latency", bench_latency.run),
        ("voice", bench_voice.run),
        ("fidelity", lambda: bench_fidelity.run(dbs=["sqlite", "postgres"], pg_url=pg_url)),
    ]
    for name, stage in stages:
        started = time.perf_counter()
        await stage()
        print(f"== {name} took {time.perf_counter() - started:.0f} s ==", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="Run every benchmark")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    print(
        f"machine: {platform.platform()}, Python {platform.python_version()}, {platform.processor() or 'cpu'}"
    )
    print("== compressor CPU ==", flush=True)
    bench_compressor.main()
    print("== cache policy CPU ==", flush=True)
    bench_cache_policy.main()
    print("== summary call: standalone vs cached prefix ==", flush=True)
    bench_summary_mode.main()
    asyncio.run(_async_part(args.postgres_url))
    print(f"all benchmarks done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
