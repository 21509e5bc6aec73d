"""What a call may cost at most before it is sent, and what it was billed once it answered.

The worst case is what the ledger reserves: the prompt as estimated (calibrated to the API's count and
raised by a margin for what estimates miss), every prompt token at the dearest price the request can
incur (a cache write at its longest TTL when the request marks the cache), `max_tokens` of output, the
server's compaction pass when the request lets the API compact (it reads the prompt once more and
writes a summary), and the fees of the server tools the request offers (each search it may run). The
billed cost is the model table's price of what the API reported.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from agent.llm import LLMRequest, LLMResponse
from agent.models import WEB_SEARCH_USD, ModelInfo, cost_usd, lookup_model
from agent.tokens import Calibration, estimate_messages, estimate_system, estimate_tools

PROMPT_MARGIN: Final = 1.25
"""Estimates of the prompt are raised by a quarter: tiktoken and calibration are close to the API's count
on text, further off on code, other scripts and media; a reservation that is too high only holds the
budget a moment longer."""
REQUEST_OVERHEAD_TOKENS: Final = 64
DEFAULT_MAX_SEARCHES: Final = 10
"""Searches assumed for a web search tool offered without `max_uses`."""
_PER_MTOK: Final = 1_000_000


def prompt_bound(request: LLMRequest, calibration: Calibration | None = None) -> int:
    """An upper bound on the request's prompt tokens as the API will count them."""
    estimate = (
        estimate_system(request.system) + estimate_messages(request.messages) + estimate_tools(request.tools)
    )
    scaled = max(estimate, calibration.apply(estimate)) if calibration is not None else estimate
    return math.ceil(scaled * PROMPT_MARGIN) + REQUEST_OVERHEAD_TOKENS


def worst_case_usd(request: LLMRequest, calibration: Calibration | None = None) -> float:
    """The most the call can cost (see the module docstring)."""
    model = lookup_model(request.model)
    prompt = prompt_bound(request, calibration)
    input_price = model.input_per_mtok * _input_multiplier(model, request)
    one_pass = prompt * input_price + request.max_tokens * model.output_per_mtok
    passes = 2 if request.context_management is not None else 1
    factor = model.price_factor(prompt * passes)
    return one_pass * passes * factor / _PER_MTOK + server_tool_fees(request.tools)


def billed_usd(response: LLMResponse) -> float:
    """What the API billed for the call: its reply, the server's compaction pass if it ran one, and the
    searches."""
    model = lookup_model(response.model)
    # Cache writes the API did not say the TTL of are priced as one-hour writes, the dearer.
    total = cost_usd(model, response.usage, ttl="1h")
    if response.compaction_usage is not None:
        total += cost_usd(model, response.compaction_usage, ttl="1h")
    return total


def server_tool_fees(tools: Iterable[Mapping[str, Any]]) -> float:
    """The per-use fees of the server tools offered: each web search the tool may run."""
    fees = 0.0
    for tool in tools:
        if str(tool.get("type", "")).startswith("web_search"):
            uses = tool.get("max_uses")
            fees += (uses if isinstance(uses, int) and uses > 0 else DEFAULT_MAX_SEARCHES) * WEB_SEARCH_USD
    return fees


def _input_multiplier(model: ModelInfo, request: LLMRequest) -> float:
    """The dearest price factor a prompt token of the request can be billed at: a cache write at the
    longest TTL the request marks (the automatic cache counts as a mark), else plain input."""
    ttls = _cache_ttls(request)
    if not ttls:
        return 1.0
    return max(1.0, *(model.cache.write("1h" if ttl == "1h" else "5m") for ttl in ttls))


def _cache_ttls(request: LLMRequest) -> set[str]:
    ttls: set[str] = set()
    if request.automatic_cache is not None:
        ttls.add(str(request.automatic_cache.get("ttl", "5m")))
    blocks: list[Any] = [*request.system, *request.tools]
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, list):
            blocks.extend(content)
    for block in blocks:
        marker = block.get("cache_control") if isinstance(block, Mapping) else None
        if isinstance(marker, Mapping):
            ttls.add(str(marker.get("ttl", "5m")))
    return ttls
