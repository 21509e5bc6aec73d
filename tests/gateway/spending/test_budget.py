"""Every model call asks the budget first: a call that does not fit is never sent, one the API refused
frees its hold, one whose answer was lost counts at its worst case, and admins hear once per budget."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from agent.errors import BudgetExceededError, LLMBadRequestError, LLMUnavailableError
from agent.llm import LLMRequest, LLMResponse
from agent.spending.periods import Caps, Limit, SpendFor
from agent.spending.prices import worst_case_usd
from agent.usage import Usage
from gateway.spending.budget import Budget, SpendingClient, spending_for
from gateway.store import Store
from gateway.store.spend.ledger import SpendLedger

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
WHO = SpendFor(chat_pk=3, user="telegram:9")


class Model:
    """Answers with a fixed usage, or raises what it is told to; counts the calls that reached it."""

    def __init__(self) -> None:
        self.usage = Usage(input_tokens=1000, output_tokens=200)
        self.fail: Exception | None = None
        self.calls = 0

    async def create(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return LLMResponse(
            content=[{"type": "text", "text": "ok"}],
            stop_reason="end_turn",
            usage=self.usage,
            model=request.model,
        )


def _request() -> LLMRequest:
    return LLMRequest(
        model="claude-sonnet-5-5",
        system=[],
        messages=[{"role": "user", "content": [{"type": "text", "text": "hello " * 300}]}],
        max_tokens=1000,
    )


def _budget(store: Store, caps: Caps, warned: list[tuple[Limit, SpendFor]] | None = None) -> Budget:
    async def warn(limit: Limit, who: SpendFor) -> None:
        if warned is not None:
            warned.append((limit, who))

    return Budget(
        SpendLedger(store.engine, worker="w", clock=lambda: NOW), caps, clock=lambda: NOW, warn=warn
    )


async def _line(budget: Budget, scope: str) -> tuple[float, float]:
    line = (await budget.ledger.totals([(scope, "2026-12-06")]))[(scope, "2026-12-06")]
    return line.spent_usd, line.reserved_usd


async def test_a_call_that_does_not_fit_is_not_sent_and_names_the_budget(store: Store) -> None:
    worst = worst_case_usd(_request())
    budget = _budget(store, Caps(chat_day=worst * 1.2))
    model = Model()
    client = SpendingClient(model, budget)
    with spending_for(WHO):
        await client.create(_request())
        with pytest.raises(BudgetExceededError) as refused:
            await client.create(_request())
    assert model.calls == 1
    assert refused.value.budget == "this chat's daily budget"
    assert refused.value.resets_at == datetime(2026, 12, 7, tzinfo=refused.value.resets_at.tzinfo)
    spent, held = await _line(budget, "chat:3")
    assert spent == pytest.approx((1000 * 2.0 + 200 * 10.0) / 1e6)
    assert held == pytest.approx(0.0)


async def test_a_refused_request_frees_its_hold_and_a_lost_answer_counts_at_worst(store: Store) -> None:
    budget = _budget(store, Caps(bot_day=5.0))
    model = Model()
    client = SpendingClient(model, budget)
    model.fail = LLMBadRequestError("400 invalid_request_error")
    with pytest.raises(LLMBadRequestError):
        await client.create(_request())
    assert await _line(budget, "bot") == (0.0, 0.0)
    model.fail = LLMUnavailableError("stream cut")
    with pytest.raises(LLMUnavailableError):
        await client.create(_request())
    spent, held = await _line(budget, "bot")
    assert spent == pytest.approx(worst_case_usd(_request()))
    assert held == pytest.approx(0.0)


async def test_admins_hear_once_when_a_budget_passes_its_warning_share(store: Store) -> None:
    warned: list[tuple[Limit, SpendFor]] = []
    caps = Caps(user_day=worst_case_usd(_request()) * 2, bot_day=100.0, warn_share=0.5)
    budget = _budget(store, caps, warned)
    client = SpendingClient(Model(), budget)
    with spending_for(WHO):
        for _ in range(2):
            await client.create(_request())
        assert warned == []
        await client.create(_request())  # spent passes half the cap
        with pytest.raises(BudgetExceededError):
            await client.create(_request())
    assert [(limit.scope, who) for limit, who in warned] == [("user:telegram:9", WHO)]


async def test_a_call_for_no_one_counts_toward_the_bot_only(store: Store) -> None:
    budget = _budget(store, Caps(chat_day=0.000001, bot_day=1.0))
    await SpendingClient(Model(), budget).create(_request())  # no chat: the chat's cap does not apply
    spent, _ = await _line(budget, "bot")
    assert spent > 0


async def test_the_metrics_count_each_kind_of_budget_and_what_is_in_flight(store: Store) -> None:
    seen: list[tuple[str, str, float]] = []
    budget = Budget(
        SpendLedger(store.engine, worker="w", clock=lambda: NOW),
        Caps(chat_day=5.0, bot_day=5.0),
        clock=lambda: NOW,
        observe=lambda event, kind, usd: seen.append((event, kind, usd)),
    )
    with spending_for(WHO):
        await SpendingClient(Model(), budget).create(_request())
    worst, cost = worst_case_usd(_request()), (1000 * 2.0 + 200 * 10.0) / 1e6
    assert [(e, k) for e, k, _ in seen] == [
        ("held", "bot"),
        ("held", "chat"),
        ("holding", ""),
        ("settled", "bot"),
        ("settled", "chat"),
        ("unheld", ""),
    ]
    assert [round(usd, 9) for _, _, usd in seen] == [
        round(x, 9) for x in (worst, worst, worst, cost, cost, worst)
    ]


class HeldModel(Model):
    """Answers only once `answer` is set, so its call's hold stays in flight until then."""

    def __init__(self) -> None:
        super().__init__()
        self.answer = asyncio.Event()
        self.reached = asyncio.Event()

    async def create(self, request: LLMRequest) -> LLMResponse:
        self.reached.set()
        await self.answer.wait()
        return await super().create(request)


async def test_a_call_crowded_out_by_calls_in_flight_waits_for_them_to_settle(store: Store) -> None:
    worst = worst_case_usd(_request())
    budget = _budget(store, Caps(chat_day=worst * 1.5))  # room for one worst case, and one bill besides
    budget.crowded_wait_s = 60.0
    slow = HeldModel()
    with spending_for(WHO):
        first = asyncio.create_task(SpendingClient(slow, budget).create(_request()))
        await asyncio.wait_for(slow.reached.wait(), 30)
        fast = Model()
        second = asyncio.create_task(SpendingClient(fast, budget).create(_request()))
        await asyncio.sleep(0.3)  # it has asked once and found the room held (no answer yet either way)
        assert not second.done()
        slow.answer.set()  # the first call's bill is far below its hold: room for the second
        await asyncio.wait_for(asyncio.gather(first, second), 30)
    assert fast.calls == 1
    spent, held = await _line(budget, "chat:3")
    assert spent == pytest.approx(2 * (1000 * 2.0 + 200 * 10.0) / 1e6)
    assert held == pytest.approx(0.0)


async def test_a_crowded_call_that_never_fits_is_refused_without_marking_the_budget_spent(
    store: Store,
) -> None:
    worst = worst_case_usd(_request())
    budget = _budget(store, Caps(chat_day=worst * 1.5))
    budget.crowded_wait_s = 0.6
    slow = HeldModel()
    with spending_for(WHO):
        first = asyncio.create_task(SpendingClient(slow, budget).create(_request()))
        await asyncio.wait_for(slow.reached.wait(), 30)
        with pytest.raises(BudgetExceededError):
            await SpendingClient(Model(), budget).create(_request())
        assert budget.known_spent(WHO) is None  # others' holds, not money spent: the next message is let in
        slow.answer.set()
        await first
