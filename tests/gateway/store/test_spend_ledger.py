"""The spending ledger on both backends: a hold that does not fit is refused whole, settling replaces the
hold by the cost, a dead worker's hold counts as spent, and workers reserving at once never pass a cap."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta

import pytest

from agent.spending.periods import Caps, SpendFor
from gateway.store import Store
from gateway.store.spend.ledger import Held, LineTotal, Refused, SpendLedger

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def _ledger(store: Store, worker: str = "w1", clock: object = None) -> SpendLedger:
    return SpendLedger(store.engine, worker=worker, clock=clock or (lambda: NOW))  # type: ignore[arg-type]


async def test_a_hold_that_does_not_fit_one_line_holds_nothing_anywhere(store: Store) -> None:
    ledger = _ledger(store)
    limits = Caps(bot_day=10.0, chat_day=1.0).limits(SpendFor(chat_pk=1), NOW)
    first = await ledger.reserve(limits, 0.6, purpose="reply")
    assert isinstance(first, Held)
    second = await ledger.reserve(limits, 0.6, purpose="reply")
    assert isinstance(second, Refused)
    assert second.limit.scope == "chat:1"
    assert second.used_usd == pytest.approx(0.6)
    totals = await ledger.totals((limit.scope, limit.period) for limit in limits)
    assert totals[("bot", "2026-12-06")] == LineTotal(0.0, pytest.approx(0.6))  # type: ignore[arg-type]
    assert not second.lasting  # the first call's hold takes the room, for now
    await ledger.settle(first, 0.6)
    third = await ledger.reserve(limits, 0.6, purpose="reply")
    assert isinstance(third, Refused)
    assert third.lasting  # what is spent leaves no room: spent until the day ends
    assert (await ledger.totals([("chat:1", "2026-12-06")]))[("chat:1", "2026-12-06")].exhausted
    assert isinstance(await ledger.reserve(limits, 0.1, purpose="reply"), Refused)


async def test_settling_replaces_the_hold_by_the_cost_and_warns_once(store: Store) -> None:
    ledger = _ledger(store)
    limits = Caps(chat_day=1.0).limits(SpendFor(chat_pk=1), NOW)
    held = await ledger.reserve(limits, 0.5, purpose="reply")
    assert isinstance(held, Held)
    assert await ledger.settle(held, 0.3, warn=limits, share=0.8) == []
    held = await ledger.reserve(limits, 0.6, purpose="reply")
    assert isinstance(held, Held)
    passed = await ledger.settle(held, 0.55, warn=limits, share=0.8)
    assert [limit.scope for limit in passed] == ["chat:1"]
    held = await ledger.reserve(limits, 0.1, purpose="reply")
    assert isinstance(held, Held)
    assert await ledger.settle(held, 0.05, warn=limits, share=0.8) == []  # told once
    totals = await ledger.totals([("chat:1", "2026-12-06")])
    assert totals[("chat:1", "2026-12-06")].spent_usd == pytest.approx(0.9)
    assert totals[("chat:1", "2026-12-06")].reserved_usd == pytest.approx(0.0)


async def test_a_released_hold_frees_the_budget(store: Store) -> None:
    ledger = _ledger(store)
    limits = Caps(chat_day=1.0).limits(SpendFor(chat_pk=1), NOW)
    held = await ledger.reserve(limits, 0.9, purpose="reply")
    assert isinstance(held, Held)
    await ledger.release(held)
    assert isinstance(await ledger.reserve(limits, 0.9, purpose="reply"), Held)


async def test_a_dead_workers_hold_counts_as_spent_and_its_late_settlement_corrects_it(store: Store) -> None:
    clock = [NOW]
    ledger = _ledger(store, clock=lambda: clock[0])
    limits = Caps(chat_day=1.0).limits(SpendFor(chat_pk=1), NOW)
    held = await ledger.reserve(limits, 0.4, purpose="reply")
    assert isinstance(held, Held)
    clock[0] = NOW + timedelta(minutes=20)
    assert await ledger.sweep() == 1
    line = (await ledger.totals([("chat:1", "2026-12-06")]))[("chat:1", "2026-12-06")]
    assert (line.spent_usd, line.reserved_usd) == (pytest.approx(0.4), pytest.approx(0.0))
    await ledger.settle(held, 0.1)  # the call did answer after all
    line = (await ledger.totals([("chat:1", "2026-12-06")]))[("chat:1", "2026-12-06")]
    assert line.spent_usd == pytest.approx(0.1)
    assert await ledger.open_reservations() == 0


async def _worker(url: str, name: str, caps: Caps, spent: list[float]) -> None:
    store = await Store.open(url)
    ledger = SpendLedger(store.engine, worker=name, clock=lambda: NOW)
    rng = random.Random(name)
    try:
        for i in range(40):
            who = SpendFor(chat_pk=rng.randint(1, 5), user=f"telegram:{rng.randint(1, 3)}")
            held = await ledger.reserve(caps.limits(who, NOW), 0.05, purpose="reply")
            if isinstance(held, Refused):
                continue
            await asyncio.sleep(0)
            cost = rng.uniform(0.0, 0.05)
            if i % 7 == 0:
                await ledger.release(held)
            else:
                await ledger.settle(held, cost)
                spent.append(cost)
    finally:
        await store.close()


@pytest.mark.postgres
async def test_two_workers_reserving_at_once_never_pass_the_bots_cap(pg_url: str) -> None:
    caps = Caps(bot_day=1.0, chat_day=0.5, user_day=0.6)
    spent: list[float] = []
    await asyncio.gather(*(_worker(pg_url, f"w{n}", caps, spent) for n in range(4)))
    assert 0.8 < sum(spent) <= 1.0
    store = await Store.open(pg_url)
    try:
        ledger = SpendLedger(store.engine, worker="check", clock=lambda: NOW)
        line = (await ledger.totals([("bot", "2026-12-06")]))[("bot", "2026-12-06")]
        assert line.spent_usd == pytest.approx(sum(spent))
        assert line.reserved_usd == pytest.approx(0.0, abs=1e-9)
    finally:
        await store.close()


async def test_a_call_refused_only_for_other_calls_holds_leaves_the_budget_open(store: Store) -> None:
    ledger = _ledger(store)
    limits = Caps(chat_day=1.0).limits(SpendFor(chat_pk=1), NOW)
    first = await ledger.reserve(limits, 0.7, purpose="reply")
    assert isinstance(first, Held)
    crowded = await ledger.reserve(limits, 0.5, purpose="reply")  # 0.7 held: no room now
    assert isinstance(crowded, Refused)
    assert not crowded.lasting
    await ledger.settle(first, 0.1)  # the first call cost far less than it held
    assert isinstance(await ledger.reserve(limits, 0.5, purpose="reply"), Held)
    assert not (await ledger.totals([("chat:1", "2026-12-06")]))[("chat:1", "2026-12-06")].exhausted
