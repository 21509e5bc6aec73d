"""How much the fake's adaptive-thinking models think at each effort, through the real SDK: billed as
output, the model's default when unset, scripts winning, and (paced) written before the first text."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Literal

import anthropic
import pytest

from tests.fakes.anthropic import FakeAnthropic, Pacing, ThinkingVolume
from tests.fakes.fake_anthropic_support import text_of, user

SONNET = "claude-sonnet-5-5"
HIGH = 400
ECHO_HI = 3  # "echo: hi" is 8 bytes: ceil(8 / 3.5) tokens


@pytest.fixture(name="fake")
async def fake_anthropic() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(thinking_volume=ThinkingVolume(high_tokens=HIGH)) as server:
        yield server


@pytest.fixture(name="client")
async def sdk_client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    sdk = anthropic.AsyncAnthropic(api_key="test-key", base_url=fake.base_url, max_retries=0, timeout=10.0)
    yield sdk
    await sdk.close()


async def output_tokens(client: anthropic.AsyncAnthropic, model: str = SONNET, **extra: Any) -> int:
    message: anthropic.types.Message = await client.messages.create(
        model=model, max_tokens=4096, messages=user("hi"), **extra
    )
    assert text_of(message.content[-1]) == "echo: hi"
    return message.usage.output_tokens


@pytest.mark.parametrize(
    ("effort", "thinking"), [("low", 100), ("medium", 200), ("high", 400), ("xhigh", 800), ("max", 1600)]
)
async def test_each_effort_level_bills_its_thinking_as_output(
    client: anthropic.AsyncAnthropic, effort: str, thinking: int
) -> None:
    billed = await output_tokens(client, output_config={"effort": effort})

    assert billed == thinking + ECHO_HI


@pytest.mark.parametrize(
    ("model", "thinking"),
    [
        ("claude-sonnet-5-5", HIGH),
        ("claude-fable-5-1", HIGH),
        ("claude-opus-5-5", HIGH // 2),
        ("claude-haiku-5-5", HIGH // 2),
    ],
)
async def test_an_unset_effort_thinks_at_the_models_default(
    client: anthropic.AsyncAnthropic, model: str, thinking: int
) -> None:
    """Opus 5.5 and Haiku 5.5 default to medium, the others to high."""
    assert await output_tokens(client, model) == thinking + ECHO_HI


async def test_a_scripted_thinking_size_wins_over_the_effort(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply("Sure.", thinking_tokens=50)

    message = await client.messages.create(
        model=SONNET, max_tokens=4096, messages=user("hi"), output_config={"effort": "max"}
    )

    assert message.usage.output_tokens == 50 + 2


async def test_between_tools_thinks_nothing_up_front(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    billed = await output_tokens(client, thinking={"type": "between_tools"}, output_config={"effort": "high"})

    assert billed == ECHO_HI
    assert fake.requests[-1].paced is not None
    assert fake.requests[-1].paced.thinking_s == 0.0


async def _first_text_after(
    client: anthropic.AsyncAnthropic, effort: Literal["low", "high"]
) -> tuple[float, float]:
    """Seconds from sending a streamed request to its first text, and to its end."""
    started = time.monotonic()
    first = None
    async with client.messages.stream(
        model=SONNET, max_tokens=4096, messages=user("hi"), output_config={"effort": effort}
    ) as stream:
        async for event in stream:
            if first is None and event.type == "content_block_delta" and event.delta.type == "text_delta":
                first = time.monotonic() - started
        await stream.get_final_message()
    assert first is not None
    return first, time.monotonic() - started


async def test_paced_thinking_is_written_before_the_first_text(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    """Omitted thinking streams no text of its own, yet takes its tokens' time at the token rate."""
    fake.pacing = Pacing(first_token_s=0.05, tokens_per_s=800.0)

    high_first, high_end = await _first_text_after(client, "high")
    high = fake.requests[-1].paced
    low_first, _ = await _first_text_after(client, "low")
    low = fake.requests[-1].paced

    assert high is not None
    assert low is not None
    assert high.thinking_s == pytest.approx(HIGH / 800.0)  # 0.5 s
    assert low.thinking_s == pytest.approx(HIGH / 4 / 800.0)
    assert high.first_text_s == pytest.approx(0.05 + 0.5 + 8 / 3.5 / 800.0)
    assert high.total_s == pytest.approx(high.first_text_s)  # "echo: hi" is one delta
    assert high_first >= 0.5
    assert low_first < high_first - 0.25
    assert high_end >= high.total_s


async def test_an_answer_not_streamed_waits_for_its_thinking_too(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.pacing = Pacing(first_token_s=0.0, tokens_per_s=1000.0)

    started = time.monotonic()
    await output_tokens(client, output_config={"effort": "high"})
    waited = time.monotonic() - started

    paced = fake.requests[-1].paced
    assert paced is not None
    assert paced.thinking_s == pytest.approx(0.4)
    assert paced.total_s == pytest.approx(0.4 + 8 / 3.5 / 1000.0)
    assert waited >= 0.4


async def test_a_script_within_a_chat_waits_for_that_chat(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    """Chats answered at once each get their own scripted replies."""
    fake.script_reply("for Bea", within="[chat bea]")

    other = await client.messages.create(model=SONNET, max_tokens=4096, messages=user("[chat al] hi"))
    bea = await client.messages.create(model=SONNET, max_tokens=4096, messages=user("[chat bea] hi"))

    assert text_of(other.content[-1]) == "echo: [chat al] hi"
    assert text_of(bea.content[-1]) == "for Bea"


def test_a_volume_needs_every_level() -> None:
    with pytest.raises(ValueError, match="xhigh"):
        ThinkingVolume(scale={"low": 0.5, "medium": 0.7, "high": 1.0, "max": 2.0})
