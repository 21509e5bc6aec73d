"""Two more views of the cost benchmark (`bench.bench_cost`): the keep-alive against fixed TTLs per
family and per chat, the worst chats shown (`--keepalive`); and the planned window on 1M models with the
reply model against its predecessor (`--planned`).
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.bench_cost import SEED, Job, Measured, _policy, default_workers, measure_all
from bench.cost_chats import ChatCost
from bench.databases import DEFAULT_POSTGRES_URL
from bench.traces import FAMILIES, LONG_FAMILIES, TraceSizes

KEEPALIVE_POLICIES = ("5m", "1h", "default")
WORST = 3
"""Chats shown per family: the default's worst against the oracle of its own requests."""


async def run_keepalive(
    *,
    sizes: TraceSizes | None = None,
    db: str = "postgres",
    pg_url: str = DEFAULT_POSTGRES_URL,
    workers: int | None = None,
    families: Sequence[str] = FAMILIES,
    seeds: Sequence[int] = (SEED,),
    model: str | None = None,
) -> dict[str, dict[str, list[Measured]]]:
    """Per family (its draws over `seeds` summed): fixed 5m, fixed 1h and the default, each over the
    oracle of the default's own requests, with the default's keep-alive refreshes; then each family's
    worst chats under each. `model` replays on another reply model's prices (None: the default)."""
    sizes = sizes or TraceSizes()
    jobs = [
        Job(family, _policy(name), sizes, db, pg_url, seed=seed, bounds=name == "default", model=model)
        for family in families
        for seed in seeds
        for name in KEEPALIVE_POLICIES
    ]
    results: dict[str, dict[str, list[Measured]]] = {}
    for m in await measure_all(jobs, workers=workers or default_workers()):
        results.setdefault(m.job.family, {}).setdefault(m.job.policy.name, []).append(m)
    for row in results.values():
        for draws in row.values():
            draws.sort(key=lambda m: m.job.seed)
    print(
        f"keep-alive on {model or 'the default model'}, seeds {', '.join(map(str, seeds))} "
        "(USD input, summed over the seeds; ratios to the oracle of the default's own requests)"
    )
    print(
        f"{'family':9s} "
        + " ".join(f"{n:>9s} {n + '/or':>9s}" for n in KEEPALIVE_POLICIES)
        + f" {'refreshes':>9s} {'worst chat 5m/1h/def':>20s}"
    )
    for family, row in results.items():
        oracle = sum(m.oracle for m in row["default"])
        usd = {n: sum(m.usd for m in row[n]) for n in KEEPALIVE_POLICIES}
        cells = " ".join(f"{usd[n]:9.4f} {usd[n] / oracle:9.3f}" for n in KEEPALIVE_POLICIES)
        worst = _worst_chats(row)[:1]
        tail = " ".join(f"{r:.2f}" for r in worst[0][1]) if worst else "-"
        print(f"{family:9s} {cells} {sum(m.refreshes for m in row['default']):9d} {tail:>20s}")
    print(
        f"worst chats (default/oracle per chat; the same chat under the other policies), {WORST} per family"
    )
    for family, row in results.items():
        _worst(family, row)
    return results


def _chats(row: dict[str, list[Measured]], name: str) -> dict[tuple[int, str], ChatCost]:
    return {(m.job.seed, c.chat_id): c for m in row[name] for c in m.per_chat}


def _worst_chats(row: dict[str, list[Measured]]) -> list[tuple[tuple[int, str], tuple[float, ...]]]:
    """The default's chats, worst first, each with its ratio to its own oracle under each policy (in
    `KEEPALIVE_POLICIES` order)."""
    chats = {n: _chats(row, n) for n in KEEPALIVE_POLICIES}
    ranked = []
    for key, d in chats["default"].items():
        if d.oracle <= 0:
            continue
        ratios = tuple(chats[n][key].usd / d.oracle if key in chats[n] else 0.0 for n in KEEPALIVE_POLICIES)
        ranked.append((key, ratios))
    ranked.sort(key=lambda kv: kv[1][KEEPALIVE_POLICIES.index("default")], reverse=True)
    return ranked


def _worst(family: str, row: dict[str, list[Measured]]) -> None:
    chats = {n: _chats(row, n) for n in KEEPALIVE_POLICIES}
    for key, _ in _worst_chats(row)[:WORST]:
        d = chats["default"][key]
        cells = " ".join(_cell(n, chats[n][key], d.oracle) for n in KEEPALIVE_POLICIES if key in chats[n])
        seed, cid = key
        print(
            f"  {family:9s} {cid:4s} seed {seed:<5d} {d.messages:3d} msgs over {d.span_s / 3600:5.1f} h: "
            + cells
        )


def _cell(name: str, chat: ChatCost, oracle: float) -> str:
    return f"{name} {chat.usd / oracle:.2f} ({chat.calls} calls, {chat.refreshes} refr)"


PLANNED_WINDOWS = (200_000, 500_000, 1_000_000)
MODELS = (("claude-sonnet-5-5", "claude-haiku-5-5"), ("claude-sonnet-4-6", "claude-haiku-4-5"))
"""The reply model and its summary model: the default pair, and the pair before it."""


async def run_planned(
    *,
    sizes: TraceSizes | None = None,
    db: str = "postgres",
    pg_url: str = DEFAULT_POSTGRES_URL,
    workers: int | None = None,
    families: Sequence[str] = (*FAMILIES, *LONG_FAMILIES),
) -> dict[tuple[str, str, int], Measured]:
    """Every family under the default settings on Sonnet 5.5 (Haiku 5.5 summaries) at planned windows
    of 200K, 500K and 1M, and on Sonnet 4.6 (Haiku 4.5 summaries) at its 200K: USD (input and output,
    summaries included) per chat-day, and summary calls."""
    sizes = sizes or TraceSizes()
    default = _policy("default")
    sonnet55, sonnet46 = MODELS
    jobs = [
        Job(f, default, sizes, db, pg_url, bounds=False, model=sonnet55[0], summary=sonnet55[1], planned=w)
        for f in families
        for w in PLANNED_WINDOWS
    ] + [
        Job(
            f,
            default,
            sizes,
            db,
            pg_url,
            bounds=False,
            model=sonnet46[0],
            summary=sonnet46[1],
            planned=200_000,
        )
        for f in families
    ]
    results: dict[tuple[str, str, int], Measured] = {}
    for m in await measure_all(jobs, workers=workers or default_workers()):
        assert m.job.model is not None
        assert m.job.planned is not None
        results[(m.job.family, m.job.model, m.job.planned)] = m
    print("planned window (USD per chat-day, input and output, summaries included; summary calls)")
    head = " ".join(f"{'5.5 @' + str(w // 1000) + 'K':>16s}" for w in PLANNED_WINDOWS)
    print(f"{'family':9s} {'chat-days':>9s} {head} {'4.6 @200K':>16s} {'5.5/4.6':>8s}")
    for f in families:
        cells = []
        for model, window in [(sonnet55[0], w) for w in PLANNED_WINDOWS] + [(sonnet46[0], 200_000)]:
            m = results[(f, model, window)]
            cells.append(f"{m.total_usd / m.chat_days:10.4f} ({m.summary_calls:3d})")
        new, old = results[(f, sonnet55[0], 200_000)], results[(f, sonnet46[0], 200_000)]
        days = new.chat_days
        print(f"{f:9s} {days:9d} {' '.join(cells)} {new.total_usd / old.total_usd:8.2f}")
    return results
