"""The one owner of spending decisions: whether a call may be sent, what it held, what it cost.

Every model call (a reply, a tool round, a summary, a keep-alive refresh, a retry) goes through
`SpendingClient`, which asks `Budget.hold` for the call's worst case (`agent.spending.prices`) on every
ledger line the call counts toward (`agent.spending.periods`: the bot's day and month, the chat's, the
user's) before it is sent, and settles it to the billed cost when the answer ends, or releases it when
the call failed before the API could bill it. A call that does not fit raises `BudgetExceededError` and
is not sent; one that would fit once the calls in flight settle (their holds are worst cases, their bills
usually far less) waits for them a while first. Who a call is for is set around the work that makes it
(`spending_for`): a turn names its chat and the sender it answers, a background job its chat; a call for
no one counts toward the bot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime

from agent.errors import (
    BudgetExceededError,
    LLMAuthError,
    LLMBadRequestError,
    LLMOverloadedError,
    LLMRateLimitError,
    LLMServerError,
)
from agent.llm import LLMClient, LLMRequest, LLMResponse, ask
from agent.spending.periods import Caps, Limit, SpendFor
from agent.spending.prices import billed_usd, worst_case_usd
from agent.streaming import TextSink
from agent.tokens import Calibration
from gateway.platforms.base import IncomingMessage
from gateway.store.spend.ledger import Held, LineTotal, Refused, SpendLedger

logger = logging.getLogger(__name__)

REMEMBERED_MAX = 10_000
CROWDED_POLL_S = (0.25, 0.5, 1.0)
"""How often a crowded-out call asks again: sooner first, then every second."""
ADMISSION_RESERVE_SHARE = 0.02
"""A budget with less than this share of its cap left counts as spent when a message arrives: no
reply would fit in it."""

_FOR: ContextVar[SpendFor] = ContextVar("spend_for", default=SpendFor())  # noqa: B039 (frozen value)


@contextlib.contextmanager
def spending_for(who: SpendFor) -> Iterator[None]:
    """The model calls made inside count toward `who`'s chat and user (and the bot)."""
    token = _FOR.set(who)
    try:
        yield
    finally:
        _FOR.reset(token)


def current_spender() -> SpendFor:
    return _FOR.get()


def spender(msg: IncomingMessage, chat_pk: int) -> SpendFor:
    """Who the answer to `msg` (or the command it is) is paid for: its chat and its sender."""
    return SpendFor(chat_pk=chat_pk, user=f"{msg.chat.platform}:{msg.author.user_id}")


Warn = Callable[[Limit, SpendFor], Awaitable[None]]
"""Told once when a line passes the warning share."""
Observe = Callable[[str, str, float], None]
"""(event, scope kind, USD): "held", "settled", "released", "refused", "crowded" (a call waited for calls
in flight to settle) per kind of budget; "holding" and
"unheld" once per call, as a hold starts and ends."""


@dataclass(frozen=True, slots=True)
class Standing:
    """One budget as `/stats` and `doctor` show it."""

    limit: Limit
    spent_usd: float
    held_usd: float


class Budget:
    def __init__(
        self,
        ledger: SpendLedger,
        caps: Caps,
        *,
        clock: Callable[[], datetime],
        calibration: Calibration | None = None,
        crowded_wait_s: float = 0.0,
        warn: Warn | None = None,
        observe: Observe | None = None,
    ) -> None:
        self.ledger = ledger
        self.caps = caps
        self.clock = clock
        self.calibration = calibration
        self.crowded_wait_s = crowded_wait_s
        self.warn = warn
        self.observe = observe
        self._spent: dict[tuple[str, str], BudgetExceededError] = {}
        """Budget lines this worker knows to be spent (they stay so until their period ends)."""

    def limits(self, who: SpendFor) -> list[Limit]:
        return self.caps.limits(who, self.clock())

    def known_spent(self, who: SpendFor) -> BudgetExceededError | None:
        """What this worker already knows to be spent for `who` (a call it held was refused, or a
        `spent` read said so), without asking the database: the check on the message path. A budget
        another worker found spent is found here at the turn's first call instead."""
        for limit in self.limits(who):
            known = self._spent.get((limit.scope, limit.period))
            if known is not None:
                return known
        return None

    async def spent(self, who: SpendFor) -> BudgetExceededError | None:
        """The first capped budget of `who` that is spent, as the error a call would raise: a call did
        not fit it this period, or (almost) nothing of it is left."""
        limits = self.limits(who)
        totals = await self.ledger.totals((limit.scope, limit.period) for limit in limits)
        for limit in limits:
            line = totals.get((limit.scope, limit.period), LineTotal(0.0, 0.0))
            used = line.spent_usd + line.reserved_usd
            if line.exhausted or used >= limit.cap_usd * (1.0 - ADMISSION_RESERVE_SHARE):
                return self._remember(Refused(limit, used))
        return None

    async def standing(self, who: SpendFor) -> list[Standing]:
        """The budgets that apply to `who`, with what is spent and held."""
        limits = self.limits(who)
        totals = await self.ledger.totals((limit.scope, limit.period) for limit in limits)
        shown = []
        for limit in limits:
            line = totals.get((limit.scope, limit.period), LineTotal(0.0, 0.0))
            shown.append(Standing(limit, line.spent_usd, line.reserved_usd))
        return shown

    async def hold(self, request: LLMRequest, who: SpendFor) -> Held:
        """Reserve the call's worst case; raises `BudgetExceededError` when it does not fit."""
        limits = self.limits(who)
        if not limits:  # no cap applies: nothing to hold
            return Held(0, 0.0, ())
        amount = worst_case_usd(request, self.calibration)
        result = await self._reserve(limits, amount, who)
        if isinstance(result, Refused):
            self._observe("refused", result.limit.kind, amount)
            logger.warning(
                "model call not sent: worst case $%.4f does not fit %s (%s %s: $%.4f of $%.2f used)",
                amount,
                result.limit.name,
                result.limit.scope,
                result.limit.period,
                result.used_usd,
                result.limit.cap_usd,
            )
            raise self._remember(result)
        if result.lines:
            self._per_scope("held", result, amount)
            self._observe("holding", "", amount)
        return result

    async def _reserve(self, limits: list[Limit], amount: float, who: SpendFor) -> Held | Refused:
        """Reserve `amount`; refused only for other calls' holds, ask again as they settle, for up to
        `crowded_wait_s` (a refusal for money spent is final at once)."""
        result = await self.ledger.reserve(limits, amount, purpose=_purpose(who))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.crowded_wait_s
        polls = iter(CROWDED_POLL_S)
        if isinstance(result, Refused) and not result.lasting and self.observe is not None:
            self.observe("crowded", result.limit.kind, amount)
        while isinstance(result, Refused) and not result.lasting and loop.time() < deadline:
            await asyncio.sleep(min(next(polls, CROWDED_POLL_S[-1]), max(0.0, deadline - loop.time())))
            result = await self.ledger.reserve(limits, amount, purpose=_purpose(who))
        return result

    def _remember(self, refused: Refused) -> BudgetExceededError:
        """The error for a refusal, remembered for admission when the line stays spent this period."""
        exceeded = _exceeded(refused)
        if refused.lasting:
            if len(self._spent) >= REMEMBERED_MAX:  # old periods' lines: forgotten together
                self._spent.clear()
            self._spent[(refused.limit.scope, refused.limit.period)] = exceeded
        return exceeded

    async def settle(self, held: Held, response: LLMResponse, who: SpendFor) -> None:
        if not held.lines:
            return
        cost = billed_usd(response)
        limits = self.limits(who)
        passed = await self.ledger.settle(held, cost, warn=limits, share=self.caps.warn_share)
        self._per_scope("settled", held, cost)
        self._observe("unheld", "", held.amount_usd)
        if cost > held.amount_usd:
            logger.warning(
                "a model call cost $%.4f, more than its reservation of $%.4f", cost, held.amount_usd
            )
        for limit in passed:
            share = self.caps.warn_share * 100
            logger.warning("%s has passed %.0f%% of its $%.2f cap", limit.name, share, limit.cap_usd)
            if self.warn is not None:
                await self.warn(limit, who)

    async def release(self, held: Held) -> None:
        """The call was not billed: drop its hold."""
        if not held.lines:
            return
        await self.ledger.release(held)
        self._per_scope("released", held, held.amount_usd)
        self._observe("unheld", "", held.amount_usd)

    async def forfeit(self, held: Held) -> None:
        """The call's outcome is unknown: it counts at its worst case."""
        if not held.lines:
            return
        await self.ledger.settle(held, held.amount_usd)
        self._per_scope("settled", held, held.amount_usd)
        self._observe("unheld", "", held.amount_usd)

    def _per_scope(self, event: str, held: Held, usd: float) -> None:
        """One observation per kind of scope the call counted toward (bot, chat, user)."""
        for kind in sorted({scope.split(":", 1)[0] for scope, _ in held.lines}):
            self._observe(event, kind, usd)

    def _observe(self, event: str, kind: str, usd: float) -> None:
        if self.observe is not None:
            self.observe(event, kind, usd)


def _exceeded(refused: Refused) -> BudgetExceededError:
    limit = refused.limit
    return BudgetExceededError(
        limit.name, cap_usd=limit.cap_usd, used_usd=refused.used_usd, resets_at=limit.resets_at
    )


def _purpose(who: SpendFor) -> str:
    return f"chat:{who.chat_pk}" if who.chat_pk is not None else "bot"


class SpendingClient:
    """Wraps the model client: each call's worst case is held before it is sent and settled after."""

    def __init__(self, inner: LLMClient, budget: Budget) -> None:
        self.inner = inner
        self.budget = budget

    async def create(self, request: LLMRequest) -> LLMResponse:
        return await self._call(request, None, None)

    async def stream(
        self, request: LLMRequest, on_text: TextSink, on_progress: TextSink | None = None
    ) -> LLMResponse:
        return await self._call(request, on_text, on_progress)

    async def _call(
        self, request: LLMRequest, on_text: TextSink | None, on_progress: TextSink | None
    ) -> LLMResponse:
        who = current_spender()
        held = await self.budget.hold(request, who)
        try:
            response = await ask(self.inner, request, on_text, on_progress)
        except UNBILLED:
            await self.budget.release(held)
            raise
        except BaseException:
            # The answer was lost on the way (a dropped stream, a timeout, a shutdown mid-call): the API
            # may have billed the call, so it counts at its worst case.
            await asyncio.shield(self.budget.forfeit(held))
            raise
        await self.budget.settle(held, response, who)
        return response


UNBILLED = (LLMAuthError, LLMBadRequestError, LLMRateLimitError, LLMOverloadedError, LLMServerError)
"""Errors the API answers instead of running the call: nothing was billed."""
