"""LLMSummarizer: the standalone and prefix-reusing modes, and how call failures are reported."""

from __future__ import annotations

import pytest

from agent.caching.markers import apply_cache_control, count_breakpoints
from agent.compaction.engine import SummaryRequest
from agent.compaction.prompt import build_instructions, serialize_conversation
from agent.compaction.summarizer import STANDALONE_SYSTEM, LLMSummarizer, PrefixContext
from agent.errors import (
    ContextOverflowError,
    LLMAuthError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
    LLMUnavailableError,
    SummarizerError,
)
from agent.llm import AnthropicClient, LLMRequest, LLMResponse
from agent.types import Message
from agent.usage import Usage
from tests.fakes.anthropic import FakeAnthropic

MODEL = "claude-sonnet-4-6"
SYSTEM = "You are the house assistant. " + "Keep answers short and exact. " * 250
TOOLS = [{"name": "current_time", "description": "now", "input_schema": {"type": "object", "properties": {}}}]


def history(turns: int = 12) -> list[Message]:
    messages: list[Message] = []
    for i in range(turns):
        messages.append(
            {"role": "user", "content": f"question {i} about file src/mod_{i}.py " + "detail " * 120}
        )
        messages.append(
            {"role": "assistant", "content": f"answer {i}: changed src/mod_{i}.py " + "ok " * 120}
        )
    return messages


def summary_request(messages: list[Message], start: int = 2, end: int = 18) -> SummaryRequest:
    middle = messages[start:end]
    return SummaryRequest(
        middle=middle,
        previous_summary=None,
        focus=None,
        max_tokens=2_000,
        instructions=build_instructions(
            conversation=serialize_conversation(middle), previous_summary=None, focus=None, max_tokens=2_000
        ),
        history=messages,
        middle_start=start,
        middle_end=end,
    )


class Scripted:
    """A second implementation of the LLMClient seam: records requests, replays answers or errors."""

    def __init__(self, *answers: LLMResponse | LLMError) -> None:
        self.answers = list(answers)
        self.requests: list[LLMRequest] = []

    async def create(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, LLMError):
            raise answer
        return answer


def text_response(text: str, stop: str = "end_turn") -> LLMResponse:
    content = [{"type": "text", "text": text}] if text else []
    return LLMResponse(content=content, stop_reason=stop, usage=Usage(100, 20), model="claude-haiku-4-5")


async def test_standalone_sends_the_instructions_alone_without_cache_markers() -> None:
    client = Scripted(text_response("## Goal\nship it"))
    summarize = LLMSummarizer(client, model="claude-haiku-4-5")
    request = summary_request(history())
    result = await summarize(request)
    assert result.text == "## Goal\nship it"
    assert result.model == "claude-haiku-4-5"
    assert result.usage == Usage(100, 20)
    (sent,) = client.requests
    assert sent.model == "claude-haiku-4-5"
    assert sent.system == [{"type": "text", "text": STANDALONE_SYSTEM}]
    assert sent.messages == [{"role": "user", "content": request.instructions}]
    assert sent.max_tokens == 2_000
    assert not sent.tools
    assert "cache_control" not in repr(sent)


async def test_prefix_mode_resends_the_whole_cached_window_and_scopes_the_ask() -> None:
    client = Scripted(text_response("## Goal\nsummary"))
    prefix = PrefixContext(system=SYSTEM, tools=TOOLS, model=MODEL, cache_ttl="5m")
    summarize = LLMSummarizer(client, model="claude-haiku-4-5", mode="prefix", prefix=prefix)
    messages = history()
    await summarize(summary_request(messages, start=2, end=18))
    (sent,) = client.requests
    assert sent.model == MODEL  # the cache belongs to the session's model
    assert [t["name"] for t in sent.tools] == ["current_time"]
    assert len(sent.messages) == len(messages) + 1
    reply_call = apply_cache_control(SYSTEM, messages, ttl="5m", tools=TOOLS)
    assert sent.system == reply_call.system_blocks
    # Byte-identical to the last reply call up to its last breakpoint's lookback window.
    n = len(messages)
    assert [m["content"] for m in sent.messages[: n - 3]] == [
        m["content"] for m in reply_call.messages[: n - 3]
    ]
    ask = sent.messages[-1]
    assert ask["role"] == "user"
    assert "Compact only messages 3 to 18" in str(ask["content"])
    assert "## Goal" in str(ask["content"])
    assert "<conversation>" not in str(ask["content"])  # the turns are above, not copied again
    assert count_breakpoints(reply_call) <= 4


async def test_prefix_mode_appends_to_a_trailing_user_turn() -> None:
    client = Scripted(text_response("## Goal\nsummary"))
    prefix = PrefixContext(system=SYSTEM, tools=TOOLS, model=MODEL, cache_ttl=None)
    summarize = LLMSummarizer(client, model="claude-haiku-4-5", mode="prefix", prefix=prefix)
    messages = history()
    trailing_user = messages[:-1]
    await summarize(summary_request(trailing_user, start=2, end=17))
    (sent,) = client.requests
    assert len(sent.messages) == len(trailing_user)
    last = sent.messages[-1]
    assert last["role"] == "user"
    assert isinstance(last["content"], list)
    assert last["content"][0]["text"] == trailing_user[-1]["content"]
    assert "Compact only messages 3 to 17" in last["content"][-1]["text"]
    assert "cache_control" not in repr(sent)


async def test_prefix_mode_reads_the_middle_from_the_session_cache() -> None:
    messages = history(14)
    async with FakeAnthropic(api_key="k") as fake:
        client = AnthropicClient(api_key="k", base_url=fake.base_url)
        try:
            # The session's last reply call, over the whole window the compressor is now given.
            warm = apply_cache_control(SYSTEM, messages, ttl="5m", tools=TOOLS)
            await client.create(
                LLMRequest(
                    model=MODEL, system=warm.system_blocks, messages=warm.messages, tools=warm.tools or [],
                    max_tokens=64,
                )
            )  # fmt: skip
            fake.script_reply("## Goal\nprefix summary", scope="any")
            prefix = LLMSummarizer(
                client,
                model="claude-haiku-4-5",
                mode="prefix",
                prefix=PrefixContext(system=SYSTEM, tools=TOOLS, model=MODEL),
            )
            by_prefix = await prefix(summary_request(messages, 2, 18))
            standalone = LLMSummarizer(client, model="claude-haiku-4-5")
            alone = await standalone(summary_request(messages, 2, 18))
        finally:
            await client.close()
    assert by_prefix.text == "## Goal\nprefix summary"
    assert by_prefix.usage.cache_read_input_tokens > 0.8 * by_prefix.usage.prompt_tokens
    assert alone.usage.cache_read_input_tokens == 0
    assert alone.usage.cache_creation_input_tokens == 0
    assert alone.text.startswith("## Goal")


@pytest.mark.parametrize(
    ("error", "abort", "too_small"),
    [
        (LLMAuthError("bad key", status_code=401), True, False),
        (LLMRateLimitError("slow down", retry_after=30), True, False),
        (LLMUnavailableError("no route"), True, False),
        (ContextOverflowError("prompt is too long", status_code=400), False, True),
        (LLMServerError("500", status_code=500), False, False),
    ],
)
async def test_call_failures_become_summarizer_errors(error: LLMError, abort: bool, too_small: bool) -> None:
    summarize = LLMSummarizer(Scripted(error), model="claude-haiku-4-5")
    with pytest.raises(SummarizerError) as info:
        await summarize(summary_request(history()))
    assert info.value.abort is abort
    assert info.value.too_small is too_small
    assert info.value.__cause__ is error


async def test_an_empty_summary_is_an_error() -> None:
    summarize = LLMSummarizer(Scripted(text_response("   ")), model="claude-haiku-4-5")
    with pytest.raises(SummarizerError, match="empty summary") as info:
        await summarize(summary_request(history()))
    assert not info.value.abort
    assert not info.value.too_small


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError):
        LLMSummarizer(Scripted(), model="m", mode="both")  # type: ignore[arg-type]


async def test_standalone_summary_looks_at_the_images_it_summarizes() -> None:
    from agent.media import media_ref

    refs = [media_ref(media_id=i, kind="image", media_type="image/png", tokens=500) for i in range(1, 26)]
    messages: list[Message] = [
        {"role": "user", "content": [ref, {"type": "text", "text": f"[photo m{ref['media_id']}]"}]}
        for ref in refs
    ]
    client = Scripted(text_response("## Goal\nsummary"))
    summarizer = LLMSummarizer(client, model="claude-haiku-4-5")
    await summarizer(summary_request(messages, start=0, end=25))
    content = client.requests[0].messages[0]["content"]
    assert isinstance(content, list)
    shown = [b["media_id"] for b in content if b["type"] == "media_ref"]
    assert shown == list(range(6, 26))  # the newest 20, oldest first, before the instructions
    assert content[-1]["type"] == "text"
