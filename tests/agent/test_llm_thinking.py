"""AnthropicClient on a model with preserved thinking, through the real SDK against the fake API: the
thinking of a reply in which the API compacted the conversation goes back once the messages the
compaction replaced have left the window, as the API allows (it sees nothing before the block)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent.compaction.server import BETA, EDIT_TYPE
from agent.llm import AnthropicClient, LLMRequest, LLMResponse
from agent.thinking import DISPLAY_UPDATES_BETA
from agent.types import Message
from tests.fakes.anthropic import FakeAnthropic

MODEL = "claude-sonnet-5-5"
TRIGGER = 2_000
SYSTEM = [{"type": "text", "text": "You are terse."}]
TOOLS = [{"name": "current_time", "description": "now", "input_schema": {"type": "object"}}]
START: Message = {"role": "user", "content": [{"type": "text", "text": "(earlier conversation continues)"}]}


def user(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def request(messages: list[Message], *, server_compaction: bool = True) -> LLMRequest:
    edit = {"type": EDIT_TYPE, "trigger": {"type": "input_tokens", "value": TRIGGER}}
    return LLMRequest(
        model=MODEL,
        system=SYSTEM,
        messages=messages,
        tools=TOOLS,
        max_tokens=512,
        context_management={"edits": [edit]} if server_compaction else None,
        betas=(BETA, DISPLAY_UPDATES_BETA) if server_compaction else (DISPLAY_UPDATES_BETA,),
        thinking={"type": "adaptive", "display": "updates"},
    )


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(api_key="k-test") as server:
        server.compaction_min_trigger = TRIGGER
        server.compaction_summary_tokens = 200  # the compacted conversation stays far below the trigger
        yield server


@pytest.fixture
async def client(fake: FakeAnthropic) -> AsyncIterator[AnthropicClient]:
    llm = AnthropicClient(api_key="k-test", base_url=fake.base_url)
    yield llm
    await llm.close()


async def compacting_reply(fake: FakeAnthropic, client: AnthropicClient) -> LLMResponse:
    """A reply in which the API compacted a conversation past the trigger."""
    history: list[Message] = []
    for i in range(4):
        history += [
            user(f"day{i}: " + " ".join(f"note{n}" for n in range(700))),
            {"role": "assistant", "content": [{"type": "text", "text": f"Noted {i}."}]},
        ]
    fake.script_reply("All noted.")
    response = await client.create(request([*history, user("what did I tell you?")]))
    assert fake.requests[-1].compacted
    assert [b["type"] for b in response.content] == ["compaction", "thinking", "text"]
    return response


def checks(fake: FakeAnthropic) -> list[Any]:
    return [c["outcome"] for c in fake.requests[-1].thinking_checks]


async def test_the_thinking_of_a_compacting_reply_goes_back_after_the_compaction(
    fake: FakeAnthropic, client: AnthropicClient
) -> None:
    compacted = await compacting_reply(fake, client)
    # the window after adopting the compaction: what it replaced is gone, the block leads
    window = [START, compacted.as_message(), user("and then?")]
    fake.script_reply("Then nothing.", tool_uses=[{"id": "toolu_1", "name": "current_time", "input": {}}])
    later = await client.create(request(window))
    assert not fake.requests[-1].compacted
    assert later.thinking_left_out == 0
    assert checks(fake) == ["kept"]
    # and the next reply's thinking after it too
    results: Message = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "noon"}],
    }
    fake.script_reply("It is noon.")
    last = await client.create(request([*window, later.as_message(), results]))
    assert last.thinking_left_out == 0
    assert checks(fake) == ["kept", "kept"]


async def test_a_compaction_block_sent_as_text_binds_nothing_after_it(
    fake: FakeAnthropic, client: AnthropicClient
) -> None:
    compacted = await compacting_reply(fake, client)
    # a request without the compaction beta shows the summary as text: the API sees the whole prompt
    window = [START, compacted.as_message(), user("and then?")]
    fake.script_reply("Then nothing.")
    later = await client.create(request(window, server_compaction=False))
    assert later.thinking_left_out == 1
    assert fake.requests[-1].status == 200
    assert checks(fake) == []
