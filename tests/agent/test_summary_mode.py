"""Choosing between a standalone and a prefix-reusing summary call, by price and by measurement."""

from __future__ import annotations

import pytest

from agent.compaction.engine import SummaryRequest
from agent.compaction.summarizer import CostAwareSummarizer, PrefixContext, estimate_costs
from agent.llm import LLMRequest, LLMResponse
from agent.models import lookup_model
from agent.types import Message
from agent.usage import Usage
from bench.bench_summary_mode import measure

SONNET = lookup_model("claude-sonnet-4-6")
HAIKU = lookup_model("claude-haiku-4-5")


def test_worked_numbers_for_a_warm_100k_window() -> None:
    costs = estimate_costs(
        main=SONNET, aux=HAIKU, history_tokens=100_000, middle_tokens=75_000, output_tokens=5_000,
        cache_warm=True, ttl="5m",
    )  # fmt: skip
    # standalone: (75,000 + 700) x $1/M + 5,000 x $5/M
    assert costs.standalone_usd == pytest.approx(0.0757 + 0.025)
    # prefix: 100,000 x $0.30/M + 700 x $3.75/M + 5,000 x $15/M
    assert costs.prefix_usd == pytest.approx(0.03 + 0.002625 + 0.075)
    assert costs.cheaper == "standalone"


def test_a_summary_model_with_a_long_prompt_tier_is_weighed_at_that_tier() -> None:
    sonnet55, haiku55 = lookup_model("claude-sonnet-5-5"), lookup_model("claude-haiku-5-5")
    short = estimate_costs(
        main=sonnet55, aux=haiku55, history_tokens=120_000, middle_tokens=90_000, output_tokens=5_000,
        cache_warm=True, ttl="5m",
    )  # fmt: skip
    # under 100K Haiku 5.5 is at its list price: (90,000 + 700) x $0.10/M + 5,000 x $0.50/M
    assert short.standalone_usd == pytest.approx(0.00907 + 0.0025)
    assert short.cheaper == "standalone"
    long = estimate_costs(
        main=sonnet55, aux=haiku55, history_tokens=500_000, middle_tokens=400_000, output_tokens=5_000,
        cache_warm=True, ttl="5m",
    )  # fmt: skip
    # over 100K every price of the call is 5x: (400,700 x $0.10 + 5,000 x $0.50) x 5 per million
    assert long.standalone_usd == pytest.approx(5 * (0.04007 + 0.0025))
    # the warm prefix: 500,000 x $0.10/M (0.05x reads) + 700 x $2.50/M + 5,000 x $10/M
    assert long.prefix_usd == pytest.approx(0.05 + 0.00175 + 0.05)
    assert long.cheaper == "prefix"


def test_prefix_wins_when_the_summary_model_is_the_main_model_and_the_cache_is_warm() -> None:
    warm = estimate_costs(
        main=SONNET, aux=SONNET, history_tokens=100_000, middle_tokens=75_000, output_tokens=5_000,
        cache_warm=True, ttl="5m",
    )  # fmt: skip
    cold = estimate_costs(
        main=SONNET, aux=SONNET, history_tokens=100_000, middle_tokens=75_000, output_tokens=5_000,
        cache_warm=False, ttl="5m",
    )  # fmt: skip
    assert warm.cheaper == "prefix"
    assert cold.cheaper == "standalone"


class Recorder:
    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    async def create(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return LLMResponse(
            content=[{"type": "text", "text": "## Goal\nsummary"}],
            stop_reason="end_turn", usage=Usage(10, 5), model=request.model,
        )  # fmt: skip


def _request(messages: list[Message]) -> SummaryRequest:
    return SummaryRequest(
        middle=messages[2:-4], previous_summary=None, focus=None, max_tokens=4_000, instructions="summarize",
        history=messages, middle_start=2, middle_end=len(messages) - 4,
    )  # fmt: skip


async def test_the_summarizer_follows_the_cheaper_mode_per_call() -> None:
    messages: list[Message] = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "words " * 300}
        for i in range(30)
    ]
    client = Recorder()
    warm = {"value": True}
    summarizer = CostAwareSummarizer(
        client, main=SONNET, aux=SONNET,
        prefix=PrefixContext(system="system", tools=[], model=SONNET.name, cache_ttl="5m"),
        cache_warm=lambda: warm["value"], count_tokens=lambda m: len(str(m["content"])) // 4,
    )  # fmt: skip
    await summarizer(_request(messages))
    assert summarizer.last_choice == "prefix"
    assert len(client.requests[-1].messages) == len(messages) + 1  # the whole cached window, then the ask
    warm["value"] = False
    await summarizer(_request(messages))
    assert summarizer.last_choice == "standalone"
    assert len(client.requests[-1].messages) == 1


@pytest.mark.parametrize("aux", ["claude-haiku-4-5", "claude-sonnet-4-6"])
@pytest.mark.parametrize("warm", [True, False])
async def test_the_estimate_picks_what_the_fake_cache_model_measures_cheaper(aux: str, warm: bool) -> None:
    result = await measure(aux=aux, warm=warm, turns=30, max_tokens=4_000)
    assert result.estimated_cheaper == result.measured_cheaper, result


async def test_same_role_neighbours_are_never_resent_as_a_prefix() -> None:
    messages: list[Message] = [
        {"role": "user" if i % 3 else "assistant", "content": f"turn {i} " + "words " * 300}
        for i in range(30)
    ]
    client = Recorder()
    summarizer = CostAwareSummarizer(
        client, main=SONNET, aux=SONNET,
        prefix=PrefixContext(system="system", tools=[], model=SONNET.name, cache_ttl="5m"),
        cache_warm=lambda: True, count_tokens=lambda m: len(str(m["content"])) // 4,
    )  # fmt: skip
    await summarizer(_request(messages))
    assert summarizer.last_choice == "standalone"
