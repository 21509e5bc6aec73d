"""Server-side compaction in the fake Anthropic API, driven through the real SDK's beta namespace."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import anthropic
import pytest
from anthropic.types.beta import BetaCompactionBlock, BetaMessage

from agent.llm import usage_of
from agent.usage import Usage
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.anthropic.compaction import compaction_instructions
from tests.fakes.anthropic.process import spawn_fake_anthropic
from tests.fakes.anthropic.tokens import BLOCK_OVERHEAD, MESSAGE_OVERHEAD, text_tokens
from tests.fakes.fake_anthropic_support import text_of

MODEL = "claude-sonnet-4-6"
BETAS: list[Any] = ["compact-2026-01-12"]
TRIGGER = 50_000
SYSTEM: list[Any] = [
    {
        "type": "text",
        "text": "You are a careful assistant for the billing team. " * 120,  # ~1,700 tokens
        "cache_control": {"type": "ephemeral"},
    }
]
FILLER = "the quick brown fox jumps over the lazy dog and then naps in the warm afternoon sun "
"""Chat text without identifiers, so a default summary names only the facts planted on purpose."""


def edit(**options: Any) -> dict[str, Any]:
    return {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": TRIGGER}, **options}


def managed(**options: Any) -> Any:
    return {"edits": [edit(**options)]}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def long_history(newest: str = "what next?") -> list[Any]:
    """About 60,000 tokens: the facts first, then long chatter, then the newest question."""
    messages = [user("Please fix ORDER-7731 in src/billing/invoice.py using retry_budget."), assistant("ok")]
    for _ in range(12):
        messages += [user(FILLER * 200), assistant("noted")]
    return [*messages, user(newest)]


def prompt_of(usage: Any) -> int:
    return int(usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens)


def as_usage(usage: Any) -> Usage:
    return usage_of(usage)


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    sdk = anthropic.AsyncAnthropic(api_key="test-key", base_url=fake.base_url, max_retries=0, timeout=10.0)
    yield sdk
    await sdk.close()


async def create(client: anthropic.AsyncAnthropic, messages: list[Any], **extra: Any) -> BetaMessage:
    options: dict[str, Any] = {"betas": BETAS, "context_management": managed(), **extra}
    message: BetaMessage = await client.beta.messages.create(
        model=options.pop("model", MODEL), max_tokens=512, system=SYSTEM, messages=messages, **options
    )
    return message


async def test_below_the_trigger_nothing_is_compacted_and_usage_is_unchanged(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    messages: list[Any] = [user("Please fix ORDER-7731."), assistant("ok"), user("and then?")]

    managed_reply = await create(client, messages)
    fake.reset()
    plain = await client.beta.messages.create(model=MODEL, max_tokens=512, system=SYSTEM, messages=messages)

    assert [block.type for block in managed_reply.content] == ["text"]
    assert managed_reply.usage.iterations is None
    assert managed_reply.usage.model_dump() == plain.usage.model_dump()
    assert fake.requests[-1].compacted is False


async def test_above_the_trigger_the_reply_starts_with_a_compaction_block_and_bills_both_iterations(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    history = long_history()
    counted = await client.messages.count_tokens(model=MODEL, system=SYSTEM, messages=history)

    message = await create(client, history)

    assert [block.type for block in message.content] == ["compaction", "text"]
    assert isinstance(message.content[0], BetaCompactionBlock)
    summary = message.content[0].content
    assert summary is not None
    for fact in ("ORDER-7731", "src/billing/invoice.py", "retry_budget"):
        assert fact in summary
    assert text_of(message.content[1]) == "echo: what next?"
    assert message.stop_reason == "end_turn"
    assert message.usage.iterations is not None
    compaction, sampled = message.usage.iterations
    assert (compaction.type, sampled.type) == ("compaction", "message")
    # The compaction iteration reads the whole conversation (writing the marked system prompt) ...
    assert prompt_of(compaction) == counted.input_tokens > TRIGGER
    assert compaction.cache_creation_input_tokens > 1000
    assert compaction.output_tokens == text_tokens(summary)
    # ... and the reply is sampled from the system prompt (now cached) and the compaction block.
    assert sampled.cache_read_input_tokens == compaction.cache_creation_input_tokens
    assert sampled.input_tokens == text_tokens(summary) + BLOCK_OVERHEAD + MESSAGE_OVERHEAD
    assert sampled.cache_creation_input_tokens == 0
    assert sampled.output_tokens == text_tokens("echo: what next?")
    top = message.usage
    assert (top.input_tokens, top.output_tokens) == (sampled.input_tokens, sampled.output_tokens)
    assert (top.cache_read_input_tokens, top.cache_creation_input_tokens) == (
        sampled.cache_read_input_tokens,
        sampled.cache_creation_input_tokens,
    )
    assert prompt_of(top) < counted.input_tokens // 10
    assert fake.total_usage() == as_usage(compaction) + as_usage(sampled)
    assert fake.requests[-1].compacted is True
    assert "context_management" not in message.model_dump(exclude_none=True)


async def test_the_next_request_costs_the_same_with_or_without_the_history_before_the_compaction() -> None:
    async def next_turn(with_history: bool) -> tuple[BetaMessage, int]:
        async with (
            FakeAnthropic() as server,
            anthropic.AsyncAnthropic(api_key="test-key", base_url=server.base_url, max_retries=0) as sdk,
        ):
            history = long_history()
            first = await create(sdk, history)
            sent_back = assistant([block.model_dump() for block in first.content])
            messages: list[Any] = [*history, sent_back] if with_history else [sent_back]
            messages.append(user("and the invoice?"))
            counted = await sdk.beta.messages.count_tokens(
                model=MODEL, system=SYSTEM, messages=messages, betas=BETAS, context_management=managed()
            )
            return await create(sdk, messages), counted.input_tokens

    short, short_count = await next_turn(with_history=False)
    full, full_count = await next_turn(with_history=True)

    assert short.usage.model_dump() == full.usage.model_dump()
    assert short_count == full_count == prompt_of(short.usage) < TRIGGER
    assert (short.usage.cache_read_input_tokens or 0) > 0  # the system prompt, cached by the compacting call
    assert [block.type for block in short.content] == ["text"]
    assert text_of(short.content[0]) == "echo: and the invoice?"
    assert short.usage.iterations is None


async def test_a_null_compaction_block_is_ignored(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    failed = [
        user("hi"),
        assistant([{"type": "compaction", "content": None}, {"type": "text", "text": "ok"}]),
    ]
    plain = [user("hi"), assistant([{"type": "text", "text": "ok"}])]

    with_failed = await create(client, [*failed, user("more")])
    fake.reset()
    without = await create(client, [*plain, user("more")])

    assert with_failed.usage.model_dump() == without.usage.model_dump()


async def test_pause_after_compaction_returns_only_the_compaction_block(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    message = await create(client, long_history(), context_management=managed(pause_after_compaction=True))

    assert message.stop_reason == "compaction"
    assert [block.type for block in message.content] == ["compaction"]
    assert message.usage.iterations is not None
    assert [iteration.type for iteration in message.usage.iterations] == ["compaction"]
    assert prompt_of(message.usage) == message.usage.output_tokens == 0
    assert fake.total_usage() == as_usage(message.usage.iterations[0])
    assert fake.requests[-1].compacted is True


async def test_streaming_delivers_the_compaction_block_then_the_reply(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    async with client.beta.messages.stream(
        model=MODEL,
        max_tokens=512,
        system=SYSTEM,
        messages=long_history(),
        betas=BETAS,
        context_management=managed(),
    ) as stream:
        final = await stream.get_final_message()

    recorded = fake.requests[-1].usage
    assert recorded is not None
    assert [block.type for block in final.content] == ["compaction", "text"]
    assert "ORDER-7731" in (final.content[0].content or "")  # type: ignore[union-attr]
    assert text_of(final.content[1]) == "echo: what next?"
    assert final.stop_reason == "end_turn"
    assert final.usage.iterations is not None
    assert [iteration.model_dump(exclude_none=True) for iteration in final.usage.iterations] == recorded[
        "iterations"
    ]
    assert (final.usage.input_tokens, final.usage.output_tokens) == (
        recorded["input_tokens"],
        recorded["output_tokens"],
    )


async def test_a_custom_summarizer_writes_the_summary_and_gets_the_instructions(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    seen: list[Mapping[str, Any]] = []

    def summarizer(body: Mapping[str, Any]) -> str:
        seen.append(body)
        return f"Only ORDER-7731 matters. ({compaction_instructions(body)})"

    fake.compaction_summarizer = summarizer
    message = await create(client, long_history(), context_management=managed(instructions="keep order ids"))

    assert message.content[0].content == "Only ORDER-7731 matters. (keep order ids)"  # type: ignore[union-attr]
    assert len(seen) == 1
    assert seen[0]["messages"][-1] == user("what next?")


def _bad(**overrides: Any) -> dict[str, Any]:
    return {"messages": [user("hi")], **overrides}


INVALID: list[tuple[str, dict[str, Any], str]] = [
    (
        "trigger below the minimum",
        _bad(
            context_management={"edits": [{**edit(), "trigger": {"type": "input_tokens", "value": 49_999}}]}
        ),
        "context_management.edits.0.trigger.value: Input should be greater than or equal to 50000",
    ),
    ("no beta header", _bad(betas=[]), "compact-2026-01-12"),
    ("unsupported model", _bad(model="claude-haiku-4-5"), "not supported for model 'claude-haiku-4-5'"),
    (
        "compaction block in a user message",
        _bad(messages=[user([{"type": "compaction", "content": "summary"}])]),
        "compaction blocks may only appear in assistant messages",
    ),
    (
        "another edit type",
        _bad(context_management={"edits": [{"type": "clear_tool_uses_20250919"}]}),
        "not implemented by this fake",
    ),
    (
        "a compaction block without the beta",
        _bad(messages=[assistant([{"type": "compaction", "content": "s"}]), user("hi")], betas=[]),
        "compaction blocks require",
    ),
]


@pytest.mark.parametrize(("case", "overrides", "expected"), INVALID, ids=[c[0] for c in INVALID])
async def test_invalid_compaction_requests_get_400(
    client: anthropic.AsyncAnthropic, case: str, overrides: dict[str, Any], expected: str
) -> None:
    options = dict(overrides)
    messages = options.pop("messages")
    if options.get("betas") == []:
        del options["betas"]
        options["context_management"] = options.get("context_management", managed())
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.beta.messages.create(model=MODEL, max_tokens=64, messages=messages, **options)
    else:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await create(client, messages, **options)

    assert caught.value.status_code == 400
    assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert expected in caught.value.body["error"]["message"], case  # type: ignore[index]


async def test_the_summary_budget_is_a_control_of_the_separate_process() -> None:
    async with spawn_fake_anthropic() as remote:
        await remote.set_compaction_summary_tokens(120)
        with pytest.raises(ValueError, match="positive integer"):
            await remote.set_compaction_summary_tokens(0)
        async with anthropic.AsyncAnthropic(
            api_key="test-key", base_url=remote.base_url, max_retries=0
        ) as sdk:
            message = await create(sdk, long_history())
        records = await remote.requests()
        total = await remote.total_usage()

    assert message.usage.iterations is not None
    compaction, sampled = message.usage.iterations
    assert 0 < compaction.output_tokens <= 120
    assert records[-1]["compacted"] is True
    assert total == as_usage(compaction) + as_usage(sampled)
