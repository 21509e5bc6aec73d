"""The API's own tool blocks: kept or dropped whole and paired, across compaction cuts and a mixed turn
(a server search and one of our tools in the same answer)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent.citations import lookup_errors, reply_text, sources, sources_line, with_sources
from agent.compaction.boundaries import safe_cuts
from agent.compaction.prompt import serialize_conversation
from agent.llm import LLMResponse
from agent.loop import Conversation, Entry, LoopConfig, run_turn
from agent.messages import repair_tool_pairs
from agent.models import lookup_model
from agent.server_blocks import DROPPED_TEXT, repair_server_pairs
from agent.server_tools import ServerTools, WebSearch, lookup_status
from agent.tokens import Calibration
from agent.tools.current_time import current_time_tool
from agent.tools.registry import ToolRegistry
from agent.types import Block, Message
from agent.usage import Usage
from tests.agent.test_loop import SYSTEM, Hooks, KeepTail, ScriptedLLM, user

SONNET = lookup_model("claude-sonnet-5-5")
USE: Block = {
    "type": "server_tool_use",
    "id": "srvtoolu_1",
    "name": "web_search",
    "input": {"query": "tides"},
}
RESULT: Block = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://a.example/t",
            "title": "Tides",
            "encrypted_content": "x",
        }
    ],
}
CITED: Block = {
    "type": "text",
    "text": "High tide is at noon",
    "citations": [
        {
            "type": "web_search_result_location",
            "url": "https://a.example/t",
            "title": "Tides",
            "encrypted_index": "i",
        }
    ],
}


def assistant(*blocks: Block) -> Message:
    return {"role": "assistant", "content": list(blocks)}


def test_a_pair_stays_whole_and_a_lone_half_is_dropped_with_its_citations() -> None:
    whole = [user("q"), assistant(USE, RESULT, CITED), user("thanks")]
    assert repair_server_pairs(whole) == (whole, 0)
    lone_result = [user("q"), assistant(RESULT, CITED), user("thanks")]
    repaired, dropped = repair_server_pairs(lone_result)
    assert dropped == 1
    assert repaired[1]["content"] == [{"type": "text", "text": "High tide is at noon"}]
    lone_use = [user("q"), assistant(USE), user("thanks")]
    repaired, _ = repair_server_pairs(lone_use)
    assert repaired[1]["content"] == [{"type": "text", "text": DROPPED_TEXT}]
    # the newest assistant message's call is pending (a mixed turn), not lost
    pending = [
        user("q"),
        assistant(USE, {"type": "tool_use", "id": "t1", "name": "current_time", "input": {}}),
    ]
    assert repair_tool_pairs(pending)[0] == pending


def test_compaction_never_cuts_between_a_call_and_a_result_that_came_later() -> None:
    tool_use: Block = {"type": "tool_use", "id": "t1", "name": "current_time", "input": {}}
    messages = [
        user("q"),
        assistant(USE, tool_use),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "noon"}]},
        assistant(RESULT, CITED),
        user("thanks"),
    ]
    safe = safe_cuts(messages)
    assert safe[1:5] == [True, False, False, True]


def test_the_summarizer_sees_the_sources_titles_and_urls() -> None:
    answer = assistant(USE, RESULT, {"type": "text", "text": "Well, "}, CITED, {"type": "text", "text": "."})
    text = serialize_conversation([user("q"), answer])
    assert "[assistant] Well, High tide is at noon.\n" in text + "\n"  # one line, as written
    assert 'web_search({"query":"tides"})' in text
    assert "[web search result] Tides <https://a.example/t>" in text


def test_a_cited_reply_is_joined_as_written_and_ends_with_its_sources() -> None:
    content = [USE, RESULT, {"type": "text", "text": "Well, "}, CITED, {"type": "text", "text": "."}]
    assert reply_text(content) == "Well, High tide is at noon."
    assert sources(content)[0].url == "https://a.example/t"
    assert with_sources(reply_text(content), content) == (
        "Well, High tide is at noon.\n\nSources: [Tides](https://a.example/t)"
    )
    assert sources_line([]) == ""
    failed: Block = {
        "type": "web_search_tool_result",
        "tool_use_id": "s",
        "content": {"type": "web_search_tool_result_error", "error_code": "too_many_requests"},
    }
    assert lookup_errors([failed]) == ["the web search service was busy"]
    assert with_sources("", [failed]) == "I could not look that up: the web search service was busy."
    assert lookup_status(USE) == "Searching the web\u2026 tides\n"


async def test_a_mixed_turn_sends_the_pending_call_back_with_our_tool_result() -> None:
    tool_use: Block = {"type": "tool_use", "id": "t1", "name": "current_time", "input": {}}
    first = LLMResponse([USE, tool_use], "tool_use", Usage(100, 10, web_search_requests=0), SONNET.name)
    second = LLMResponse([RESULT, CITED], "end_turn", Usage(100, 10, web_search_requests=1), SONNET.name)
    llm, hooks = ScriptedLLM(first, second), Hooks()
    hooks.engine = engine = KeepTail()
    config = LoopConfig(
        model=SONNET,
        calibration=Calibration(SONNET.name),
        max_tokens=16_000,
        server_tools=ServerTools(search=WebSearch()),
    )
    tools = ToolRegistry([current_time_tool(lambda: datetime(2026, 12, 6, 12, tzinfo=UTC))])
    result: Any = await run_turn(
        Conversation(
            llm=llm,
            engine=engine,
            window=[Entry(user("tides and time?"), 1)],
            system=SYSTEM,
            tools=tools,
            config=config,
        ),
        hooks=hooks,
    )
    sent = llm.requests[1].messages
    assert sent[1]["content"][0] == USE  # the call the server runs once our result is back
    assert sent[2]["content"][0]["tool_use_id"] == "t1"
    assert result.reply_text == "High tide is at noon\n\nSources: [Tides](https://a.example/t)"
    assert [t["name"] for t in llm.requests[0].tools][-1] == "web_search"
