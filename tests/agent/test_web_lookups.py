"""Web search and fetch run by the API: the loop through the real SDK against the fake's web tools."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.errors import LLMBadRequestError
from agent.llm import AnthropicClient, LLMRequest
from agent.loop import Conversation, Entry, LoopConfig, run_turn
from agent.messages import repair_tool_pairs
from agent.models import lookup_model
from agent.server_tools import FETCH_BETA, ServerTools, WebFetch, WebSearch
from agent.spending.prices import billed_usd, worst_case_usd
from agent.tokens import Calibration
from agent.tools.current_time import current_time_tool
from agent.tools.registry import ToolRegistry
from tests.agent.test_loop import SYSTEM, Hooks, KeepTail, user
from tests.agent.test_loop_thinking import Sink
from tests.fakes.anthropic import FakeAnthropic

SONNET = lookup_model("claude-sonnet-5-5")
WEB = ServerTools(search=WebSearch(max_uses=3), fetch=WebFetch(max_uses=2))


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(api_key="k-test") as server:
        yield server


@pytest.fixture
async def client(fake: FakeAnthropic) -> AsyncIterator[AnthropicClient]:
    llm = AnthropicClient(api_key="k-test", base_url=fake.base_url)
    yield llm
    await llm.close()


async def turn(
    client: AnthropicClient,
    hooks: Hooks,
    window: list[Entry[Any]],
    *,
    sink: Sink | None = None,
    tools: ToolRegistry | None = None,
) -> Any:
    engine = KeepTail()
    hooks.engine = engine
    config = LoopConfig(
        model=SONNET, calibration=Calibration(SONNET.name), max_tokens=16_000, server_tools=WEB
    )
    conversation = Conversation(
        llm=client,
        engine=engine,
        window=window,
        system=SYSTEM,
        tools=tools or ToolRegistry(),
        config=config,
        stream=sink,
    )
    return await run_turn(conversation, hooks=hooks)


def test_definitions_are_the_newest_the_model_takes_and_stable() -> None:
    new = WEB.definitions(SONNET)
    assert [d["type"] for d in new] == ["web_search_20260318", "web_fetch_20260318"]
    assert new == WEB.definitions(SONNET)  # byte-stable: the cached prefix holds
    old = lookup_model("claude-haiku-4-5")
    assert [d["type"] for d in WEB.definitions(old)] == ["web_search_20250305", "web_fetch_20250910"]
    assert WEB.betas(old) == (FETCH_BETA,)
    pinned = ServerTools(search=WebSearch(version="web_search_20260209"))
    assert pinned.definitions(SONNET)[0]["type"] == "web_search_20260209"
    with pytest.raises(ValueError, match="both"):
        ServerTools(search=WebSearch(allowed_domains=("a.com",), blocked_domains=("b.com",)))


async def test_a_cited_answer_ends_with_its_sources_and_the_search_is_billed(
    fake: FakeAnthropic, client: AnthropicClient
) -> None:
    hooks, sink = Hooks(), Sink()
    result = await turn(client, hooks, [Entry(user("search: python 3.14 release"), 1)], sink=sink)
    assert (
        "python 3.14 release is documented on docs.example.com, and wiki.example.org agrees."
        in result.reply_text
    )
    assert result.reply_text.endswith(
        "Sources: [python 3.14 release - docs.example.com](https://docs.example.com/python-3-14-release), "
        "[python 3.14 release - wiki.example.org](https://wiki.example.org/python-3-14-release)"
    )
    assert ("progress", "Searching the web\u2026 python 3.14 release\n") in sink.events
    response = hooks.usages[0][0]
    assert response.usage.web_search_requests == 1
    request = fake.requests[0].body
    assert [t["name"] for t in request["tools"]] == ["web_search", "web_fetch"]
    # the fee is part of the billed cost; the worst case holds every search the tool may run
    assert billed_usd(response) >= 0.01
    probe = LLMRequest(
        model=SONNET.name, system=[], messages=[user("x")], max_tokens=10, tools=WEB.definitions(SONNET)
    )
    assert worst_case_usd(probe) >= 3 * 0.01
    # stored verbatim: the next turn sends the blocks back and the API takes them
    window = [
        Entry(user("search: python 3.14 release"), 1),
        Entry(hooks.persisted[0], 2),
        Entry(user("thanks"), 3),
    ]
    again = await turn(client, hooks, window)
    assert again.reply_text == "echo: thanks"
    assert fake.requests[-1].status == 200


async def test_a_paused_turn_goes_on_to_its_answer(fake: FakeAnthropic, client: AnthropicClient) -> None:
    hooks = Hooks()
    result = await turn(client, hooks, [Entry(user("deep search: tide tables"), 1)])
    assert [r.status for r in fake.requests] == [200, 200]
    assert fake.requests[0].answer["stop_reason"] == "pause_turn"
    assert result.stop_reason == "end_turn"
    assert "tide tables (more) is documented" in result.reply_text
    assert "Sources:" in result.reply_text
    assert sum(u[0].usage.web_search_requests for u in hooks.usages) == 2


async def test_a_mixed_turn_sends_the_waiting_search_back_with_our_tool_result(
    fake: FakeAnthropic, client: AnthropicClient
) -> None:
    """The search waits in the first answer beside our tool call (no result, `stop_reason: tool_use`);
    it runs when our result goes back, so the call must go back unchanged with it."""
    hooks = Hooks()
    clock = ToolRegistry([current_time_tool(lambda: datetime(2026, 12, 6, 9, 30, tzinfo=UTC))])
    result = await turn(client, hooks, [Entry(user("search with the time: lisbon weather"), 1)], tools=clock)
    assert [r.status for r in fake.requests] == [200, 200], "the waiting call was accepted back"
    first, second = fake.requests
    assert first.answer["stop_reason"] == "tool_use"
    assert [b["type"] for b in first.answer["content"]] == ["server_tool_use", "tool_use"]
    sent_back = second.body["messages"]
    assert [b["type"] for b in sent_back[-2]["content"]] == ["server_tool_use", "tool_use"]
    assert sent_back[-1]["content"][0]["type"] == "tool_result"
    assert second.answer["content"][0]["type"] == "web_search_tool_result"
    assert result.stop_reason == "end_turn"
    assert "lisbon weather is documented on docs.example.com" in result.reply_text
    assert "Sources:" in result.reply_text
    assert sum(u[0].usage.web_search_requests for u in hooks.usages) == 1
    # stored as answered, the call and its result (a message apart) stay a pair: the next turn is accepted
    window = [Entry(user("search with the time: lisbon weather"), 1)]
    window += [Entry(m, i + 2) for i, m in enumerate(hooks.persisted)]
    window.append(Entry(user("thanks"), len(window) + 2))
    repaired, _ = repair_tool_pairs([e.message for e in window])
    assert repaired == [e.message for e in window], "nothing to repair in a finished mixed turn"
    again = await turn(client, Hooks(), window, tools=clock)
    assert again.reply_text == "echo: thanks"
    assert fake.requests[-1].status == 200


async def test_altered_or_orphaned_server_blocks_are_refused_and_repair_drops_them_whole(
    fake: FakeAnthropic, client: AnthropicClient
) -> None:
    hooks = Hooks()
    await turn(client, hooks, [Entry(user("search: moon"), 1)])
    answer = hooks.persisted[0]
    altered = copy.deepcopy(answer)
    result_block = next(b for b in altered["content"] if b["type"] == "web_search_tool_result")
    result_block["content"][0]["title"] = "changed"
    with pytest.raises(LLMBadRequestError, match="exactly as the API returned"):
        await turn(client, Hooks(), [Entry(user("search: moon"), 1), Entry(altered, 2), Entry(user("ok"), 3)])
    orphan = {
        "role": "assistant",
        "content": [b for b in answer["content"] if b["type"] != "server_tool_use"],
    }
    with pytest.raises(LLMBadRequestError, match="without a preceding"):
        await turn(client, Hooks(), [Entry(user("search: moon"), 1), Entry(orphan, 2), Entry(user("ok"), 3)])
    repaired, _ = repair_tool_pairs([user("search: moon"), orphan, user("ok")])
    kinds = [b["type"] for b in repaired[1]["content"]]
    assert "web_search_tool_result" not in kinds
    assert all("citations" not in b for b in repaired[1]["content"])
    fine = await turn(client, Hooks(), [Entry(m, i) for i, m in enumerate(repaired)])
    assert fine.reply_text == "echo: ok"


async def test_a_failed_lookup_is_told_in_plain_words_and_not_billed(
    fake: FakeAnthropic, client: AnthropicClient
) -> None:
    fake.web.next_error = "too_many_requests"
    hooks = Hooks()
    result = await turn(client, hooks, [Entry(user("search: weather"), 1)])
    assert "Sources" not in result.reply_text
    assert hooks.usages[0][0].usage.web_search_requests == 0


async def test_both_domain_lists_are_a_400(client: AnthropicClient) -> None:
    tool = {
        "type": "web_search_20260318",
        "name": "web_search",
        "allowed_domains": ["a.com"],
        "blocked_domains": ["b.com"],
    }
    with pytest.raises(LLMBadRequestError, match="both allowed_domains and blocked_domains"):
        await client.create(
            LLMRequest(model=SONNET.name, system=[], messages=[user("hi")], max_tokens=100, tools=[tool])
        )


async def test_a_fetch_reads_the_page_the_user_gave(fake: FakeAnthropic, client: AnthropicClient) -> None:
    hooks = Hooks()
    result = await turn(client, hooks, [Entry(user("fetch: https://example.com/a"), 1)])
    assert result.reply_text == "The page https://example.com/a says hello."
    assert hooks.usages[0][0].usage.web_fetch_requests == 1
