"""The loop's per-call cache plan: the first call reads live entries and writes the chosen tail,
tool rounds read what the turn cached and write 5m, and the turn reports where its entries are."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from agent.caching.plan import CachePoint, TurnCachePlan
from agent.llm import LLMRequest, LLMResponse
from agent.loop import Entry
from agent.tools.current_time import current_time_tool
from agent.tools.registry import ToolRegistry
from agent.usage import Usage
from tests.agent.test_loop import ScriptedLLM, turn, user
from tests.agent.test_loop import reply as plain_reply

CACHED = Usage(20, 10, cache_creation_input_tokens=1_500)
"""Usage of a call whose markers wrote an entry (a prompt over the model's minimum)."""


def reply(text: str = "", *, tools: Sequence[tuple[str, str, dict[str, Any]]] = ()) -> LLMResponse:
    return plain_reply(text, tools=tools, usage=CACHED)


HOUR = {"type": "ephemeral", "ttl": "1h"}
FIVE = {"type": "ephemeral"}


def message_markers(request: LLMRequest) -> list[tuple[int, dict[str, Any]]]:
    found: list[tuple[int, dict[str, Any]]] = []
    for i, message in enumerate(request.messages):
        content = message["content"]
        if isinstance(content, list):
            found += [(i, dict(b["cache_control"])) for b in content if "cache_control" in b]
    return found


def history() -> list[Entry]:
    return [
        Entry(user("old question"), (1,)),
        Entry({"role": "assistant", "content": "old answer"}, (2,)),
        Entry(user("new question"), (3, 4)),
    ]


async def test_first_call_reads_only_and_the_tool_round_writes_five_minutes() -> None:
    clock = current_time_tool(lambda: datetime(2026, 3, 14, 15, 9, tzinfo=UTC))
    llm = ScriptedLLM(reply("Checking.", tools=[("t1", "current_time", {})]), reply("It is 15:09."))
    plan = TurnCachePlan(reads=((0, "1h"),), first_tail=None, round_tail="5m")
    result = await turn(llm, window=history(), tools=ToolRegistry([clock]), plan=plan)
    first, second = llm.requests
    assert message_markers(first) == [
        (0, HOUR)
    ]  # reads the live hour entry, leaves the new question unmarked
    assert all("cache_control" not in b for b in first.system)
    assert message_markers(second) == [(0, HOUR), (4, FIVE)]  # the tool result is read seconds later
    assert "cache_control" in second.system[-1]
    assert result.cache_points == [CachePoint((1,), "1h", True), CachePoint(102, "5m", True)]


async def test_a_marked_first_tail_is_read_by_the_tool_round() -> None:
    clock = current_time_tool(lambda: datetime(2026, 3, 14, 15, 9, tzinfo=UTC))
    llm = ScriptedLLM(reply("Checking.", tools=[("t1", "current_time", {})]), reply("Done."))
    plan = TurnCachePlan(reads=((0, "5m"),), first_tail="1h", round_tail="5m")
    result = await turn(llm, window=history(), tools=ToolRegistry([clock]), plan=plan)
    first, second = llm.requests
    assert message_markers(first) == [(0, HOUR), (2, HOUR)]  # the 5m read is raised to precede the 1h tail
    assert message_markers(second) == [(2, HOUR), (4, FIVE)]
    assert result.cache_points == [CachePoint((3, 4), "1h", True), CachePoint(102, "5m", True)]


async def test_a_fixed_ttl_rolls_system_and_3_and_reports_the_newest_prefix() -> None:
    llm = ScriptedLLM(reply("ok"))
    result = await turn(llm, window=history(), plan=TurnCachePlan(rolling="1h"))
    assert message_markers(llm.requests[0]) == [(0, HOUR), (1, HOUR), (2, HOUR)]
    assert result.cache_points == [CachePoint((3, 4), "1h", True)]


async def test_a_marked_prompt_under_the_models_minimum_leaves_no_entry() -> None:
    """The API caches nothing below the model's minimum and reports neither a read nor a write: the
    turn must not record an entry the next turn would plan to read."""
    llm = ScriptedLLM(plain_reply("Hi."))
    plan = TurnCachePlan(first_tail="5m", round_tail="5m")
    result = await turn(llm, window=history(), plan=plan)
    assert message_markers(llm.requests[0]) == [(2, FIVE)]
    assert result.cache_points == []
