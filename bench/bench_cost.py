"""Input cost of seeded multi-day chat traces under each prompt-caching policy, against the oracle.

Run: `python -m bench.bench_cost`. Every trace family (see `bench.traces`) is replayed through the real
gateway (`bench.replay`) against the fake Anthropic prefix-cache model, once per policy:

    none      prompt caching off
    5m, 1h    system_and_3 breakpoints with one fixed TTL, no scheduled compaction
    api       the API's automatic caching: one top-level `cache_control` (5m), which the API places on
              the last cacheable block and moves forward itself; no scheduled compaction
    default   the project's default settings (`prompt_caching.cache_ttl=auto`: per chat and request, from
              a forecast of its next request), with the idle-compaction job run at simulated times
    server    the default settings with `context.engine: server` (the API compacts server-side); at a
              window whose threshold is below the API's 50,000-token floor, the benchmark engine
              `server-scaled` of `bench.engines`, whose floor the fake API is told to accept

At the model's own window no trace reaches the compressor's threshold, so `server` costs what `default`
costs; `--window 16000` makes the traces compact often. `--engines` compares only the two context
engines (default 16,000 tokens), with their compaction counts. `--seeds 2026,1,2` replays other draws
of every family with the fixed TTLs and the default, per seed and in total (a family is a handful of
chats, so one draw's ratio moves by several percent with the draw). Cost counts every iteration the API
bills, summaries included.

The oracle is the hindsight lower bound computed offline from the default's own request sequence
(`bench.oracle`). The `foresight` column is what not knowing the future costs a marking policy on
the same requests (`bench.foresight`: the cheapest marking that knows only each chat's mix of gaps,
over the cheapest with hindsight, in a simple model of one chat's cache): where it is above the
target ratio, no policy deciding from the gap mix alone meets the target there. Costs are
input-side only (uncached input, cache writes, cache reads), summary calls included, in USD at the
model table's prices. Targets: default <= the cheaper of 5m and 1h, and default / oracle <= 1.05, in
every family.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass
from typing import Any

from bench.databases import DEFAULT_POSTGRES_URL, fresh_database
from bench.engines import server_engine
from bench.foresight import foresight
from bench.oracle import billed_input_usd, oracle_input_usd
from bench.replay import ReplayResult, replay
from bench.traces import FAMILIES, TraceSizes, describe, generate

TARGET_RATIO = 1.05
SEED = 2026
"""The traces of the main table; `--seeds` replays others beside it."""
SEED_POLICIES = ("5m", "1h", "default")
NO_SCHEDULED = {"scheduler": {"cache_aware_share": 0.99}}
"""Baselines (a) and (b) never compact for cache reasons (hygiene at 85% still applies)."""


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    overrides: dict[str, Any]
    jobs: bool
    server_engine: bool = False
    """`context.engine: server` (`server-scaled` below the API's floor: `bench.engines.server_engine`)."""


POLICIES = (
    Policy("none", {"prompt_caching": {"enabled": False}, **NO_SCHEDULED}, jobs=False),
    Policy("5m", {"prompt_caching": {"enabled": True, "cache_ttl": "5m"}, **NO_SCHEDULED}, jobs=False),
    Policy("1h", {"prompt_caching": {"enabled": True, "cache_ttl": "1h"}, **NO_SCHEDULED}, jobs=False),
    Policy("api", {"prompt_caching": {"enabled": True, "cache_ttl": "api"}, **NO_SCHEDULED}, jobs=False),
    Policy("default", {}, jobs=True),
    Policy("server", {}, jobs=True, server_engine=True),
)
NAMES = tuple(p.name for p in POLICIES)


async def _run(
    family: str,
    policy: Policy,
    sizes: TraceSizes,
    db: str,
    pg_url: str,
    window: int | None,
    seed: int = SEED,
) -> ReplayResult:
    events = generate(family, sizes=sizes, seed=seed)
    overrides = {**policy.overrides, **({"model_context_length": window} if window else {})}
    prepare = None
    if policy.server_engine:
        engine, prepare = server_engine(window)
        overrides["context"] = {"engine": engine}
    async with fresh_database(db, postgres_url=pg_url, durable=False) as url:
        return await replay(
            events, database_url=url, settings_overrides=overrides, jobs=policy.jobs, prepare=prepare
        )


async def run(
    *,
    sizes: TraceSizes | None = None,
    db: str = "postgres",
    pg_url: str = DEFAULT_POSTGRES_URL,
    window: int | None = None,
) -> dict[str, dict[str, float]]:
    """`window` overrides the model's context window (a small one makes the traces compact often)."""
    sizes = sizes or TraceSizes()
    results: dict[str, dict[str, float]] = {}
    for family in FAMILIES:
        print(f"cost[{family}] trace: {describe(generate(family, sizes=sizes))}", flush=True)
        row: dict[str, float] = {}
        for policy in POLICIES:
            result = await _run(family, policy, sizes, db, pg_url, window)
            row[policy.name] = billed_input_usd(result.requests)
            row[f"{policy.name}_calls"] = len(result.requests)
            row[f"{policy.name}_scheduled"] = result.scheduled_compactions
            row[f"oracle_{policy.name}"] = oracle_input_usd(
                result.requests, min_cacheable=result.min_cacheable
            )
            row[f"oracle_ka_{policy.name}"] = oracle_input_usd(
                result.requests, min_cacheable=result.min_cacheable, keep_alive=True
            )
            row[f"{policy.name}_refreshes"] = result.refreshes
            if policy.name == "default":
                row["foresight"] = foresight(result.requests, min_cacheable=result.min_cacheable).ratio
            print(
                f"cost[{family}] {policy.name:8s} ${row[policy.name]:.4f} "
                f"(oracle of this sequence ${row[f'oracle_{policy.name}']:.4f}; "
                f"{len(result.requests)} calls, "
                f"{result.scheduled_compactions} scheduled compactions, "
                f"{result.summary_calls} summary calls, {result.refreshes} keep-alive refreshes, "
                f"{result.server_compactions} server-side compactions, {result.wall_s:.1f}s)",
                flush=True,
            )
        results[family] = row
    _print_table(results)
    return results


ENGINE_WINDOW = 16_000


async def run_engines(
    *, sizes: TraceSizes | None = None, db: str = "postgres", pg_url: str = DEFAULT_POSTGRES_URL, window: int
) -> dict[str, dict[str, float]]:
    """Per family, the default settings with the built-in compressor and with server-side compaction."""
    sizes = sizes or TraceSizes()
    results: dict[str, dict[str, float]] = {}
    for family in FAMILIES:
        events = generate(family, sizes=sizes)
        row: dict[str, float] = {}
        for engine in ("compressor", "server"):
            overrides: dict[str, Any] = {"model_context_length": window}
            prepare = None
            if engine == "server":
                name, prepare = server_engine(window)
                overrides["context"] = {"engine": name}
            async with fresh_database(db, postgres_url=pg_url, durable=False) as url:
                result = await replay(
                    events, database_url=url, settings_overrides=overrides, jobs=True, prepare=prepare
                )
            row[engine] = billed_input_usd(result.requests)
            row[f"{engine}_calls"] = len(result.requests)
            row[f"{engine}_compactions"] = result.summary_calls + result.server_compactions
            row[f"{engine}_server"] = result.server_compactions
            print(
                f"engines[{family}] {engine:10s} ${row[engine]:.4f} ({len(result.requests)} calls, "
                f"{result.summary_calls} summary calls, {result.server_compactions} server-side compactions, "
                f"{result.wall_s:.1f}s)",
                flush=True,
            )
        results[family] = row
    print(f"engines summary at a {window:,}-token window (USD input cost, summaries included)")
    print(f"{'family':9s} {'compressor':>10s} {'server':>9s} {'server/comp':>11s} {'compactions c/s':>16s}")
    for family, row in results.items():
        ratio = row["server"] / row["compressor"]
        print(
            f"{family:9s} {row['compressor']:10.4f} {row['server']:9.4f} {ratio:11.2f} "
            f"{int(row['compressor_compactions']):>8d}/{int(row['server_compactions'])}"
        )
    return results


async def run_seeds(
    seeds: list[int], *, sizes: TraceSizes, db: str, pg_url: str
) -> dict[str, list[tuple[int, dict[str, float]]]]:
    """Per family, the fixed TTLs and the default on other draws of the same trace family: one seed's
    traces are a handful of chats, so a ratio on one draw moves by several percent with the draw."""
    policies = [p for p in POLICIES if p.name in SEED_POLICIES]
    results: dict[str, list[tuple[int, dict[str, float]]]] = {}
    for family in FAMILIES:
        for seed in seeds:
            row: dict[str, float] = {}
            for policy in policies:
                result = await _run(family, policy, sizes, db, pg_url, None, seed)
                row[policy.name] = billed_input_usd(result.requests)
                if policy.name == "default":
                    row["oracle"] = oracle_input_usd(result.requests, min_cacheable=result.min_cacheable)
            print(
                f"cost[{family} seed {seed}] 5m ${row['5m']:.4f} 1h ${row['1h']:.4f} "
                f"default ${row['default']:.4f} oracle ${row['oracle']:.4f}",
                flush=True,
            )
            results.setdefault(family, []).append((seed, row))
    print("cost over seeds (USD input; default/oracle per seed, then the family's totals)")
    print(
        f"{'family':9s} {'per-seed default/oracle':>32s} {'5m':>8s} {'1h':>8s} {'default':>8s} "
        f"{'oracle':>8s} {'def/or':>7s} {'def>fixed':>9s}"
    )
    for family, rows in results.items():
        totals = {k: sum(r[k] for _, r in rows) for k in ("5m", "1h", "default", "oracle")}
        ratios = " ".join(f"{r['default'] / r['oracle']:.2f}" for _, r in rows)
        above = sum(1 for _, r in rows if r["default"] > min(r["5m"], r["1h"]))
        print(
            f"{family:9s} {ratios:>32s} {totals['5m']:8.4f} {totals['1h']:8.4f} {totals['default']:8.4f} "
            f"{totals['oracle']:8.4f} {totals['default'] / totals['oracle']:7.2f} {above:>5d} of {len(rows)}"
        )
    return results


def _print_table(results: dict[str, dict[str, float]]) -> None:
    print(
        "cost summary (USD input cost; ratios to the oracle of the default policy's own requests: "
        "`oracle` chooses markers only, `or+ka` may also keep entries alive by refreshing them)"
    )
    head = " ".join(f"{n:>9s}" for n in (*NAMES, "oracle", "or+ka"))
    print(
        f"{'family':9s} {head} {'def/or':>7s} {'def/or+ka':>9s} {'best fixed/or':>13s} {'api/or':>7s} "
        f"{'server/or':>9s} {'refreshes':>9s} {'foresight':>9s}"
    )
    for family, row in results.items():
        d = row["oracle_default"]
        ka = row["oracle_ka_default"]
        fixed = min(row["5m"], row["1h"])
        cells = " ".join(f"{row[n]:9.4f}" for n in NAMES)
        print(
            f"{family:9s} {cells} {d:9.4f} {ka:9.4f} {row['default'] / d:7.2f} {row['default'] / ka:9.2f} "
            f"{fixed / d:13.2f} {row['api'] / d:7.2f} {row['server'] / d:9.2f} "
            f"{int(row['default_refreshes']):9d} {row['foresight']:9.2f}"
        )
        # the server engine compacts at other points, so its requests are not the default's
        if ka > min(row[p.name] for p in POLICIES if not p.server_engine):
            print(f"  WARNING: the oracle is not a lower bound for {family}")
        if row["default"] > fixed:
            print(f"  default above the cheaper fixed TTL for {family} by {row['default'] / fixed - 1:.1%}")
    print(f"targets: default <= min(5m, 1h) and default/oracle <= {TARGET_RATIO:.2f} in every family")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--quick", action="store_true", help="one chat per family, one or two days")
    parser.add_argument("--window", type=int, default=None, help="model context window override (tokens)")
    parser.add_argument("--engines", action="store_true", help="compare the built-in and server-side engines")
    parser.add_argument(
        "--seeds", default=None, help="comma-separated trace seeds: fixed TTLs and the default on each"
    )
    args = parser.parse_args()
    sizes = TraceSizes(1, 1, 1, 2, 1, 1, 2, 1, 1, 1) if args.quick else TraceSizes()
    if args.seeds:
        seeds = [int(s) for s in args.seeds.split(",")]
        asyncio.run(run_seeds(seeds, sizes=sizes, db=args.db, pg_url=args.postgres_url))
        return
    if args.engines:
        window = args.window or ENGINE_WINDOW
        asyncio.run(run_engines(sizes=sizes, db=args.db, pg_url=args.postgres_url, window=window))
        return
    asyncio.run(run(sizes=sizes, db=args.db, pg_url=args.postgres_url, window=args.window))


if __name__ == "__main__":
    main()
