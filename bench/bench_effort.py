"""Effort levels side by side on the default model: what a chat-day costs and how long people wait.

Run: `python -m bench.bench_effort` (about two minutes). For the default model (Claude Sonnet 5.5) with
`agent.effort` unset and at each level it accepts (low, medium, high, xhigh, max):

- cost: the `help` and `tools` trace families (`bench.traces`; one-to-one help bursts, and working
  sessions whose answers take one to three tool rounds) replayed through the real gateway under the
  default settings (`bench.bench_cost`, policy `default`), billed input and output at the model table's
  prices (`agent.models`), per chat-day;
- latency: the first messages of the same traces answered with streaming on (`bench.turn_latency`):
  from a message's arrival to the reply's first words on screen and to the whole reply, p50 and p95.

The fake model (`tests.fakes.anthropic.effort`) thinks before every answer, each tool round included,
as much as the level asks; Anthropic's docs give no figures for it, so the volumes are assumptions:
`THINKING_AT_HIGH` tokens per call at high, halved per level down and doubled per level up. Thinking is
billed as output and written at 60 tokens/s before the answer's text. The visible answer is the same at
every level, so nothing here sees what a lower level costs in answer quality.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from agent.models import lookup_model
from bench.bench_cost import Job, Measured, Policy, default_workers, measure_all
from bench.databases import DEFAULT_POSTGRES_URL, fresh_sqlite
from bench.traces import TraceSizes, describe, generate
from bench.turn_latency import TurnTiming, sample_turns, time_turns
from gateway.config import DEFAULT_MODEL, AgentSettings
from tests.fakes.anthropic import ThinkingVolume
from tests.fakes.anthropic.tokens import default_models

LEVELS: tuple[str | None, ...] = (None, "low", "medium", "high", "xhigh", "max")
"""Unset (the API's default for the model), then every level Sonnet 5.5 accepts with adaptive thinking."""
FAMILIES = ("help", "tools")
THINKING_AT_HIGH = 256
"""ASSUMPTION: the fake's thinking per call at high effort, in tokens (about one and a half times the
replays' ~170-token answers). No Anthropic page gives a figure; `--thinking` tries others."""
SEED = 2026
COST_SIZES = TraceSizes(help_chats=2, help_days=1, tool_chats=1, tool_days=1)
"""Two help chats and one working session, one day each (chat-days: 2 and 1)."""
LATENCY_TURNS = 14
"""Messages sampled per family for the latency run (the first of each trace)."""
ARRIVAL_GAP_S = 1.5
"""Model-time seconds between two sampled messages' arrivals (several answered at once)."""
SPEED = 6.0
"""How much faster than the modelled API the fake runs in the latency run (`bench.turn_latency`)."""


def label(level: str | None) -> str:
    return level or "unset"


def _overrides(level: str | None) -> dict[str, dict[str, str | None]]:
    """Settings that pin the level, unset included (whatever `agent.effort` defaults to)."""
    return {"agent": {"effort": level}}


@dataclass(frozen=True, slots=True)
class LevelResult:
    level: str | None
    cost: dict[str, Measured]
    timings: list[TurnTiming]

    def per_chat_day(self, family: str) -> float:
        m = self.cost[family]
        return m.total_usd / m.chat_days

    def output_share(self) -> float:
        """Output's share of the bill, both families together."""
        total = sum(m.total_usd for m in self.cost.values())
        return (total - sum(m.usd for m in self.cost.values())) / total


def _pct(values: Sequence[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


async def measure_cost(
    *, thinking: int, db: str, pg_url: str, workers: int
) -> dict[str | None, dict[str, Measured]]:
    jobs = [
        Job(
            family,
            Policy(f"effort {label(level)}", _overrides(level), jobs=True),
            COST_SIZES,
            db,
            pg_url,
            seed=SEED,
            bounds=False,
            thinking=thinking,
        )
        for level in LEVELS
        for family in FAMILIES
    ]
    results: dict[str | None, dict[str, Measured]] = {level: {} for level in LEVELS}
    for m in await measure_all(jobs, workers=workers):
        level = m.job.policy.overrides["agent"]["effort"]
        results[level][m.job.family] = m
    return results


async def measure_latency(*, thinking: int, speed: float) -> dict[str | None, list[TurnTiming]]:
    """Every level at once, each with its own gateway, fake and database (so the shared machine is as
    busy for each); the databases are made one after another (migrations do not run side by side)."""
    turns = sample_turns(FAMILIES, per_family=LATENCY_TURNS, sizes=COST_SIZES, seed=SEED)
    async with contextlib.AsyncExitStack() as stack:
        urls = [await stack.enter_async_context(fresh_sqlite()) for _ in LEVELS]
        runs = [
            time_turns(
                turns,
                database_url=url,
                overrides=_overrides(level),
                thinking=thinking,
                speed=speed,
                gap_s=ARRIVAL_GAP_S / speed,
            )
            for level, url in zip(LEVELS, urls, strict=True)
        ]
        return dict(zip(LEVELS, await asyncio.gather(*runs), strict=True))


def print_table(results: Sequence[LevelResult], *, thinking: int) -> None:
    model = lookup_model(DEFAULT_MODEL)
    volume = ThinkingVolume(high_tokens=thinking)
    unset = default_models()[DEFAULT_MODEL].default_effort
    base = next(r for r in results if r.level is None)
    print(
        f"effort on {DEFAULT_MODEL} (${model.input_per_mtok:g}/${model.output_per_mtok:g} per MTok): "
        f"the fake thinks {thinking} tokens per call at high (assumption), scaled by level"
    )
    print(
        f"{'effort':7s} {'think/call':>10s} {'help $/day':>10s} {'tools $/day':>11s} {'vs unset':>8s} "
        f"{'output':>6s} {'first text p50/p95':>19s} {'help/tools first p50':>21s} {'reply p50/p95':>15s}"
    )
    for r in results:
        think = volume.tokens(r.level or unset)
        help_, tools = r.per_chat_day("help"), r.per_chat_day("tools")
        ratio = (help_ + tools) / (base.per_chat_day("help") + base.per_chat_day("tools"))
        first = [t.first_text_s for t in r.timings]
        reply = [t.reply_s for t in r.timings]
        helps, toolses = (_pct([t.first_text_s for t in r.timings if t.family == f], 0.5) for f in FAMILIES)
        share = r.output_share()
        print(
            f"{label(r.level):7s} {think:10d} {help_:10.4f} {tools:11.4f} {ratio:8.2f} {share:6.0%} "
            f"{_pct(first, 0.5):8.2f} / {_pct(first, 0.95):5.2f}s {helps:11.2f} / {toolses:5.2f}s "
            f"{_pct(reply, 0.5):6.2f} / {_pct(reply, 0.95):5.2f}s"
        )
    print(f"agent.effort defaults to: {label(AgentSettings().effort)}")
    print(
        "$/day: input and output USD per chat-day; vs unset: both families' $/day over unset's; output: "
        "its share of the bill; seconds from a message's arrival, p50/p95 over both families' samples"
    )


async def run(
    *,
    thinking: int = THINKING_AT_HIGH,
    db: str = "postgres",
    pg_url: str = DEFAULT_POSTGRES_URL,
    workers: int | None = None,
    speed: float = SPEED,
) -> list[LevelResult]:
    for family in FAMILIES:
        print(
            f"effort[{family}] trace: {describe(generate(family, sizes=COST_SIZES, seed=SEED))}", flush=True
        )
    timings = await measure_latency(thinking=thinking, speed=speed)
    print(f"effort: latency measured ({LATENCY_TURNS} messages per family, fake {speed:g}x)", flush=True)
    cost = await measure_cost(thinking=thinking, db=db, pg_url=pg_url, workers=workers or default_workers())
    results = [LevelResult(level, cost[level], timings[level]) for level in LEVELS]
    print_table(results, thinking=thinking)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--thinking", type=int, default=THINKING_AT_HIGH, help="fake thinking at high, tokens"
    )
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--speed", type=float, default=SPEED, help="how much faster the fake runs (latency)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(
        run(
            thinking=args.thinking,
            db=args.db,
            pg_url=args.postgres_url,
            workers=args.workers,
            speed=args.speed,
        )
    )


if __name__ == "__main__":
    main()
