"""Which summary call is cheaper: a standalone request, or one that reuses the session's cached prefix.

Standalone sends only the middle (as data) to the summary model at its full input price. Prefix
resends the whole window exactly as the last reply call did, so while the cache is warm every token
is read at 0.1x the main model's input price, but the summary is written at the main model's output
price; when the cache is cold the whole window is written at 1.25x (5m) or 2x (1h). The choice is
made per call from the model table's prices, long-prompt tiers included (`ModelInfo.price_factor`: Haiku
5.5 bills every token of a call whose prompt is over 100K at 5x, so at a planned window of 500K the
standalone summary of a 400K middle costs five times its list price and the cached prefix of the main
model, read at 0.05x, is the cheaper); `bench/bench_summary_mode.py` measures both against the fake API's
prefix-cache model and checks that this estimate picks the cheaper one.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent.context_engine import SummaryRequest, SummaryResponse, TokenCounter
from agent.llm import LLMClient
from agent.models import CacheTTL, ModelInfo
from agent.summarizer import LLMSummarizer, PrefixContext, SummaryMode
from agent.types import Message

logger = logging.getLogger(__name__)

MTOK = 1_000_000
INSTRUCTION_TOKENS = 700
"""The summary template and framing sent with either mode."""
EXPECTED_OUTPUT_SHARE = 0.6
"""Summaries use about this share of their max_tokens budget (structured template, filled in)."""


@dataclass(frozen=True, slots=True)
class SummaryCosts:
    standalone_usd: float
    prefix_usd: float

    @property
    def cheaper(self) -> SummaryMode:
        return "prefix" if self.prefix_usd < self.standalone_usd else "standalone"


def estimate_costs(
    *,
    main: ModelInfo,
    aux: ModelInfo,
    history_tokens: int,
    middle_tokens: int,
    output_tokens: int,
    cache_warm: bool,
    ttl: CacheTTL | None,
) -> SummaryCosts:
    """Expected USD cost of each mode for one summary (pure), each at its prompt's price tier."""
    aux_prompt = middle_tokens + INSTRUCTION_TOKENS
    standalone = (
        (aux_prompt * aux.input_per_mtok + output_tokens * aux.output_per_mtok)
        * aux.price_factor(aux_prompt)
        / MTOK
    )
    if ttl is None:
        prompt = (history_tokens + INSTRUCTION_TOKENS) * main.input_per_mtok
    elif cache_warm:
        prompt = history_tokens * main.cache_read_per_mtok + INSTRUCTION_TOKENS * main.cache_write_per_mtok(
            ttl
        )
    else:
        prompt = (history_tokens + INSTRUCTION_TOKENS) * main.cache_write_per_mtok(ttl)
    factor = main.price_factor(history_tokens + INSTRUCTION_TOKENS)
    prefix = (prompt + output_tokens * main.output_per_mtok) * factor / MTOK
    return SummaryCosts(standalone_usd=standalone, prefix_usd=prefix)


def alternates(messages: Sequence[Message]) -> bool:
    """True when no two neighbours share a role: only then can the window be resent as the API saw it.

    A caller that compacts stored rows one by one (group chatter) passes same-role neighbours that
    the reply calls sent merged; resending them would neither be valid nor match the cached prefix.
    """
    return all(a["role"] != b["role"] for a, b in itertools.pairwise(messages))


class CostAwareSummarizer:
    """A `Summarizer` that picks the cheaper mode for each call and delegates to `LLMSummarizer`."""

    def __init__(
        self,
        client: LLMClient,
        *,
        main: ModelInfo,
        aux: ModelInfo,
        prefix: PrefixContext | None,
        cache_warm: Callable[[], bool],
        count_tokens: TokenCounter,
        aux_client: LLMClient | None = None,
        pins: Sequence[str] = (),
    ) -> None:
        self.main = main
        self.aux = aux
        self.cache_warm = cache_warm
        self.count_tokens = count_tokens
        self.standalone = LLMSummarizer(aux_client or client, model=aux.name, pins=pins)
        self.prefixed = (
            LLMSummarizer(client, model=main.name, mode="prefix", prefix=prefix, pins=pins)
            if prefix
            else None
        )
        self.last_choice: SummaryMode | None = None

    async def __call__(self, request: SummaryRequest) -> SummaryResponse:
        mode: SummaryMode = "standalone"
        if (
            self.prefixed is not None
            and self.prefixed.prefix is not None
            and request.history
            and alternates(request.history)
        ):
            costs = estimate_costs(
                main=self.main,
                aux=self.aux,
                history_tokens=sum(self.count_tokens(m) for m in request.history),
                middle_tokens=sum(self.count_tokens(m) for m in request.middle),
                output_tokens=int(request.max_tokens * EXPECTED_OUTPUT_SHARE),
                cache_warm=self.cache_warm(),
                ttl=self.prefixed.prefix.cache_ttl,
            )
            mode = costs.cheaper
            logger.info(
                "summary via %s: estimated $%.4f (prefix) vs $%.4f (standalone)",
                mode,
                costs.prefix_usd,
                costs.standalone_usd,
            )
        self.last_choice = mode
        if mode == "prefix" and self.prefixed is not None:
            return await self.prefixed(request)
        return await self.standalone(request)
