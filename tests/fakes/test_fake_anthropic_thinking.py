"""The fake Anthropic API's models with preserved thinking, through the real SDK: adaptive thinking by
default, signed blocks bound to their prefix, drop_block, progress updates, refusals, thinking-only stops,
the settings the 5.5 family refuses, mid-conversation system messages and server-side compaction."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest
from anthropic.types import CapabilitySupport
from anthropic.types.beta import BetaContextManagementConfigParam, BetaThinkingConfigAdaptiveParam

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.anthropic.process import spawn_fake_anthropic
from tests.fakes.fake_anthropic_support import TOOLS, text_of, thinking_of, user

SONNET = "claude-sonnet-5-5"
BINDING = "thinking-binding-controls-2026-08-01"
UPDATES = "thinking-display-updates-2026-08-18"
DROP: BetaThinkingConfigAdaptiveParam = {
    "type": "adaptive",
    "block_binding": {"prefix_mismatch_behavior": "drop_block"},
}
BOUND_ELSEWHERE = (
    "messages.{i}.content.{j}: Invalid `signature` in `thinking` block. The block is bound to a "
    "different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` "
    'to "drop_block".'
)


@pytest.fixture(name="fake")
async def fake_anthropic() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture(name="client")
async def sdk_client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    sdk = anthropic.AsyncAnthropic(api_key="test-key", base_url=fake.base_url, max_retries=0, timeout=5.0)
    yield sdk
    await sdk.close()


def dumped(message: Any) -> dict[str, Any]:
    """An assistant turn to send back exactly as the API returned it."""
    return {
        "role": "assistant",
        "content": [block.model_dump(exclude_none=True) for block in message.content],
    }


async def ask(client: anthropic.AsyncAnthropic, messages: list[Any], **extra: Any) -> Any:
    return await client.messages.create(model=SONNET, max_tokens=512, messages=messages, **extra)


async def ask_beta(client: anthropic.AsyncAnthropic, messages: list[Any], **extra: Any) -> Any:
    extra.setdefault("betas", [BINDING])
    return await client.beta.messages.create(model=SONNET, max_tokens=512, messages=messages, **extra)


async def bad_request(call: Any) -> str:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await call
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["error"]["type"] == "invalid_request_error"
    return str(body["error"]["message"])


# ---- adaptive thinking and display ---------------------------------------------------------------


async def test_every_answer_starts_with_an_omitted_signed_thinking_block(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    message = await ask(client, user("hello"))

    thinking, text = message.content
    assert (thinking.type, thinking.thinking) == ("thinking", "")
    assert len(thinking.signature) > 20
    assert text.text == "echo: hello"
    assert message.stop_details is None
    # thinking counts as output: 16 hidden tokens plus the visible text
    assert message.usage.output_tokens == 16 + 4


async def test_older_models_answer_exactly_as_before(client: anthropic.AsyncAnthropic) -> None:
    message = await client.messages.create(model="claude-sonnet-4-6", max_tokens=64, messages=user("hello"))

    assert [block.type for block in message.content] == ["text"]
    assert message.usage.output_tokens == 4


async def test_summarized_display_returns_the_thinking_text(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply("Paris.", thinking="The capital of France is Paris.")

    message = await ask(client, user("capital?"), thinking={"type": "adaptive", "display": "summarized"})

    assert thinking_of(message.content[0]).thinking == "The capital of France is Paris."
    assert text_of(message.content[1]) == "Paris."


async def test_the_fake_default_display_can_be_summarized(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.default_display = "summarized"

    message = await ask(client, user("what now"))

    assert "what now" in thinking_of(message.content[0]).thinking


async def test_updates_display_needs_its_beta(client: anthropic.AsyncAnthropic) -> None:
    thinking = {"type": "adaptive", "display": "updates"}

    text = await bad_request(ask(client, user("hi"), thinking=thinking))

    assert UPDATES in text
    message = await ask_beta(client, user("hi"), thinking=thinking, betas=[UPDATES])
    assert thinking_of(message.content[0]).thinking == ""


async def test_a_thinking_only_answer_comes_back_when_thinking_takes_max_tokens(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply("The full answer.", thinking_tokens=300)

    short = await client.messages.create(model=SONNET, max_tokens=200, messages=user("think hard"))
    roomy = await client.messages.create(model=SONNET, max_tokens=1000, messages=user("think hard"))

    assert [block.type for block in short.content] == ["thinking"]
    assert (short.stop_reason, short.usage.output_tokens) == ("max_tokens", 200)
    assert text_of(roomy.content[1]) == "The full answer."  # the scripted reply stayed queued
    assert roomy.stop_reason == "end_turn"
    assert roomy.usage.output_tokens == 300 + 5


async def test_a_scripted_thinking_only_stop(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    fake.script_reply(thinking_only=True)

    message = await ask(client, user("go"))

    assert [block.type for block in message.content] == ["thinking"]
    assert (message.stop_reason, message.usage.output_tokens) == ("max_tokens", 512)
    assert text_of((await ask(client, user("again"))).content[1]) == "echo: again"


# ---- progress updates ----------------------------------------------------------------------------

PROGRESS = "Let me look that up in our history."
CALL = [{"id": "toolu_1", "name": "lookup_order", "input": {"order_id": "A-1"}}]


@pytest.mark.parametrize(
    ("thinking", "betas", "shown"),
    [
        (None, [], ""),
        ({"type": "adaptive", "display": "summarized"}, [], PROGRESS),
        ({"type": "adaptive", "display": "updates"}, [UPDATES], PROGRESS),
    ],
)
async def test_progress_text_comes_back_as_a_thinking_block_before_the_tool_call(
    fake: FakeAnthropic,
    client: anthropic.AsyncAnthropic,
    thinking: dict[str, Any] | None,
    betas: list[str],
    shown: str,
) -> None:
    fake.script_reply(tool_uses=CALL, progress=PROGRESS)
    extra: dict[str, Any] = {"thinking": thinking} if thinking else {}

    message = await ask_beta(client, user("where is A-1?"), tools=TOOLS, betas=betas or [BINDING], **extra)

    assert [block.type for block in message.content] == ["thinking", "thinking", "tool_use"]
    assert thinking_of(message.content[1]).thinking == shown
    assert message.stop_reason == "tool_use"


async def test_between_tools_has_no_up_front_thinking_and_shows_progress(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply(tool_uses=CALL, progress=PROGRESS)

    message = await ask(
        client,
        user("where?"),
        tools=TOOLS,
        thinking={"type": "between_tools"},
        output_config={"effort": "high"},
    )

    assert [block.type for block in message.content] == ["thinking", "tool_use"]
    assert thinking_of(message.content[0]).thinking == PROGRESS
    plain = await ask(client, user("hi"), thinking={"type": "between_tools"})
    assert [block.type for block in plain.content] == ["text"]


async def test_streaming_delivers_thinking_and_signature_deltas(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply(tool_uses=CALL, progress=PROGRESS, thinking="Look it up first.")
    seen: list[str] = []

    async with client.messages.stream(
        model=SONNET,
        max_tokens=512,
        messages=user("where is A-1?"),
        tools=TOOLS,
        thinking={"type": "adaptive", "display": "summarized"},
    ) as stream:
        async for event in stream:
            if event.type == "content_block_delta":
                seen.append(event.delta.type)
        final = await stream.get_final_message()

    assert {"thinking_delta", "signature_delta", "input_json_delta"} <= set(seen)
    assert [block.type for block in final.content] == ["thinking", "thinking", "tool_use"]
    assert thinking_of(final.content[0]).thinking == "Look it up first."
    assert thinking_of(final.content[1]).thinking == PROGRESS
    assert thinking_of(final.content[0]).signature
    assert thinking_of(final.content[1]).signature
    # the streamed blocks bind like plain ones: sending them back passes
    follow = [
        *user("where is A-1?"),
        dumped(final),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "shipped"}],
        },
    ]
    assert (await ask(client, follow, tools=TOOLS)).stop_reason == "end_turn"
    assert [c["outcome"] for c in fake.requests[-1].thinking_checks] == ["kept", "kept"]


# ---- the prefix check ----------------------------------------------------------------------------


async def conversation(client: anthropic.AsyncAnthropic, **extra: Any) -> list[Any]:
    first = await ask(client, user("first question"), system="Be brief.", **extra)
    return [*user("first question"), dumped(first), *user("second question")]


async def test_sending_the_first_turn_back_unchanged_passes(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    messages = await conversation(client)
    messages[1]["content"][1]["cache_control"] = {"type": "ephemeral"}  # moving markers is no change

    second = await ask(client, messages, system="Be brief.")

    assert text_of(second.content[1]) == "echo: second question"
    assert fake.requests[-1].thinking_checks == [
        {"path": "messages.1.content.0", "outcome": "kept", "reason": ""}
    ]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ("edit the first message", (1, 0)),
        ("change the system prompt", (1, 0)),
        ("add a tool", (1, 0)),
    ],
)
async def test_a_changed_prefix_gets_the_400_with_the_real_text(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, change: str, path: tuple[int, int]
) -> None:
    messages = await conversation(client)
    system = "Be brief."
    tools: list[Any] | anthropic.NotGiven = anthropic.NOT_GIVEN
    if change == "edit the first message":
        messages[0] = {"role": "user", "content": "first question (edited)"}
    elif change == "change the system prompt":
        system = "Be brief. Today is Friday."
    else:
        tools = TOOLS

    text = await bad_request(ask(client, messages, system=system, tools=tools))

    assert text == BOUND_ELSEWHERE.format(i=path[0], j=path[1])
    assert fake.requests[-1].thinking_checks[-1]["outcome"] == "rejected"


async def test_an_omitted_thinking_block_between_others_fails_the_later_one(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply(tool_uses=CALL, progress=PROGRESS)
    first = await ask(client, user("where is A-1?"), tools=TOOLS)
    turn = dumped(first)
    turn["content"].pop(0)  # leave out the leading thinking block, keep the progress one
    messages = [
        *user("where is A-1?"),
        turn,
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "shipped"}],
        },
    ]

    text = await bad_request(ask(client, messages, tools=TOOLS))

    assert text == BOUND_ELSEWHERE.format(i=1, j=0)


async def test_drop_block_with_the_beta_drops_and_reports(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    messages = await conversation(client)
    messages[0] = {"role": "user", "content": "first question (edited)"}
    by_hand = [messages[0], {"role": "assistant", "content": messages[1]["content"][1:]}, messages[2]]
    expected = await ask_beta(client, by_hand, system="Be brief.", thinking=DROP)

    message = await ask_beta(client, messages, system="Be brief.", thinking=DROP)

    assert text_of(message.content[1]) == "echo: second question"
    assert [t.model_dump() for t in message.input_transformations] == [
        {"type": "thinking_dropped", "path": "messages.1.content.0", "reason": "prefix_binding_mismatch"}
    ]
    assert fake.requests[-1].thinking_checks[0]["outcome"] == "dropped"
    assert expected.input_transformations == []
    # the dropped block contributes nothing to the prompt
    assert message.usage.input_tokens == expected.usage.input_tokens


async def test_the_binding_beta_reports_an_empty_list_when_nothing_was_dropped(
    client: anthropic.AsyncAnthropic,
) -> None:
    message = await ask_beta(client, user("hi"))

    assert message.input_transformations == []


async def test_drop_block_needs_the_binding_beta(client: anthropic.AsyncAnthropic) -> None:
    text = await bad_request(ask(client, user("hi"), thinking=DROP))

    assert BINDING in text


async def test_drop_block_streams_its_transformations_in_message_start(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    messages = await conversation(client)
    messages[0] = {"role": "user", "content": "edited"}

    async with client.beta.messages.stream(
        model=SONNET, max_tokens=256, messages=messages, system="Be brief.", thinking=DROP, betas=[BINDING]
    ) as stream:
        final = await stream.get_final_message()

    assert [t.reason for t in final.input_transformations or []] == ["prefix_binding_mismatch"]


async def test_a_block_of_another_model_is_dropped_silently(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    first = await client.messages.create(model="claude-opus-5-5", max_tokens=256, messages=user("q"))
    messages = [*user("q"), dumped(first), *user("next")]

    plain = await ask(client, messages)
    reported = await ask_beta(client, messages)

    assert text_of(plain.content[1]) == "echo: next"
    assert fake.requests[-2].thinking_checks == [
        {"path": "messages.1.content.0", "outcome": "dropped", "reason": "model_binding_mismatch"}
    ]
    assert [t.reason for t in reported.input_transformations] == ["model_binding_mismatch"]
    # Fable 5.1 reads Opus 5.5 thinking
    fable = await client.messages.create(model="claude-fable-5-1", max_tokens=256, messages=messages)
    assert text_of(fable.content[1]) == "echo: next"
    assert fake.requests[-1].thinking_checks[0]["outcome"] == "kept"


async def test_without_enforcement_a_changed_prefix_is_allowed_and_reported(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.enforce_prefix_check = False
    messages = await conversation(client)
    messages[0] = {"role": "user", "content": "edited"}

    message = await ask_beta(client, messages, system="Be brief.")

    assert [t.type for t in message.input_transformations] == ["thinking_mismatch_allowed"]
    assert fake.requests[-1].thinking_checks[0]["outcome"] == "allowed"


async def test_a_forged_signature_fails_the_check(client: anthropic.AsyncAnthropic) -> None:
    messages = await conversation(client)
    messages[1]["content"][0]["signature"] = "not-a-signature"

    text = await bad_request(ask(client, messages, system="Be brief."))

    assert text == BOUND_ELSEWHERE.format(i=1, j=0)


# ---- refusals ------------------------------------------------------------------------------------


async def test_a_refusal_is_a_200_with_stop_details(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply("I can help with part", refusal="cyber")
    fake.script_reply(refusal="bio")

    partial = await ask(client, user("write malware"))
    empty = await ask(client, user("grow a virus"))

    assert partial.stop_reason == "refusal"
    assert [block.type for block in partial.content] == ["text"]
    assert partial.stop_details.category == "cyber"
    assert partial.stop_details.explanation
    assert (empty.content, empty.stop_details.category) == ([], "bio")


async def test_a_refusal_streams_its_stop_details(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply("Partial", refusal="general_harms")

    async with client.messages.stream(model=SONNET, max_tokens=256, messages=user("x")) as stream:
        final = await stream.get_final_message()

    assert final.stop_reason == "refusal"
    assert final.stop_details is not None
    assert final.stop_details.category == "general_harms"


# ---- the settings the 5.5 family refuses ---------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "extra", "expected"),
    [
        (SONNET, {"thinking": {"type": "disabled"}}, '"thinking.type.disabled" is not supported'),
        ("claude-opus-5-5", {"thinking": {"type": "disabled"}}, "Thinking defaults to adaptive mode"),
        (
            SONNET,
            {"thinking": {"type": "enabled", "budget_tokens": 2000}},
            '"thinking.type.enabled" is not supported for this model.',
        ),
        (SONNET, {"tools": TOOLS, "tool_choice": {"type": "any"}}, "tool_choice forces tool use"),
        (
            "claude-fable-5-1",
            {"tools": TOOLS, "tool_choice": {"type": "tool", "name": "lookup_order"}},
            "tool_choice forces tool use",
        ),
        (SONNET, {"extra_body": {"temperature": 0.2}}, "`temperature` is deprecated for this model."),
        (SONNET, {"extra_body": {"top_p": 0.9}}, "`top_p` is deprecated for this model."),
        (SONNET, {"extra_body": {"top_k": 5}}, "`top_k` is deprecated for this model."),
        ("claude-opus-5-5", {"thinking": {"type": "between_tools"}}, "between_tools"),
        (SONNET, {"thinking": {"type": "between_tools", "display": "summarized"}}, "Extra inputs"),
        (
            SONNET,
            {"thinking": {"type": "between_tools"}, "output_config": {"effort": "xhigh"}},
            '"xhigh" is not supported with "thinking.type.between_tools"',
        ),
        (SONNET, {"output_config": {"effort": "extreme"}}, "output_config.effort"),
    ],
)
async def test_settings_the_55_family_refuses(
    client: anthropic.AsyncAnthropic, model: str, extra: dict[str, Any], expected: str
) -> None:
    call = client.messages.create(model=model, max_tokens=256, messages=user("hi"), **extra)

    assert expected in await bad_request(call)


async def test_settings_the_55_family_accepts(client: anthropic.AsyncAnthropic) -> None:
    for extra in (
        {"extra_body": {"temperature": 1}},
        {"output_config": {"effort": "max"}},
        {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}},
        {"thinking": {"type": "between_tools"}, "output_config": {"effort": "low"}},
        {"tools": TOOLS, "tool_choice": {"type": "auto"}},
    ):
        assert (await ask(client, user("hi"), **extra)).stop_reason == "end_turn"
    haiku = await client.messages.create(
        model="claude-haiku-5-5",
        max_tokens=256,
        messages=user("hi"),
        tools=TOOLS,
        tool_choice={"type": "any"},
    )
    assert haiku.stop_reason == "end_turn"  # forced tool choice stays on Haiku 5.5


async def test_an_assistant_prefill_is_refused(client: anthropic.AsyncAnthropic) -> None:
    messages = [*user("hi"), {"role": "assistant", "content": "Sure,"}]

    text = await bad_request(ask(client, messages))

    assert text == (
        "This model does not support assistant message prefill. "
        "The conversation must end with a user message."
    )


# ---- mid-conversation system messages ------------------------------------------------------------


async def test_a_system_message_after_a_user_turn_is_accepted_and_binds(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    note = {"role": "system", "content": "The user is on the premium plan."}
    without = await ask(client, user("hi"))
    first = await ask(client, [*user("hi"), note])

    assert first.usage.input_tokens > without.usage.input_tokens
    follow = [*user("hi"), note, dumped(first), *user("and now?")]
    assert text_of((await ask(client, follow)).content[1]) == "echo: and now?"
    edited = [
        *user("hi"),
        {**note, "content": "The user is on the free plan."},
        dumped(first),
        *user("and now?"),
    ]
    assert await bad_request(ask(client, edited)) == BOUND_ELSEWHERE.format(i=2, j=0)


@pytest.mark.parametrize(
    ("model", "messages", "expected"),
    [
        (SONNET, [{"role": "system", "content": "x"}, *user("hi")], 'right after a "user" message'),
        (
            SONNET,
            [
                *user("hi"),
                {"role": "assistant", "content": "ok"},
                {"role": "system", "content": "x"},
                *user("q"),
            ],
            'right after a "user" message',
        ),
        ("claude-sonnet-4-6", [*user("hi"), {"role": "system", "content": "x"}], 'Unexpected role "system"'),
    ],
)
async def test_system_messages_elsewhere_are_refused(
    client: anthropic.AsyncAnthropic, model: str, messages: list[Any], expected: str
) -> None:
    call = client.messages.create(model=model, max_tokens=256, messages=messages)

    assert expected in await bad_request(call)


async def test_opus_48_accepts_a_system_message_after_a_user_turn(client: anthropic.AsyncAnthropic) -> None:
    messages = [*user("hi"), {"role": "system", "content": [{"type": "text", "text": "Reply in French."}]}]

    message = await client.messages.create(model="claude-opus-4-8", max_tokens=64, messages=messages)

    assert text_of(message.content[0]) == "echo: hi"


# ---- models and server-side compaction -----------------------------------------------------------


async def test_the_model_list_names_the_current_family_with_1m_windows(
    client: anthropic.AsyncAnthropic,
) -> None:
    page = await client.models.list()
    by_id = {model.id: model for model in page.data}

    for name in ("claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5", "claude-fable-5-1"):
        info = by_id[name]
        assert (info.max_input_tokens, info.max_tokens) == (1_000_000, 128_000)
        assert info.capabilities is not None
        assert info.capabilities.thinking.types.disabled.supported is False
        assert supported(info.capabilities.context_management.compact_20260112) is True
    sonnet, haiku = by_id["claude-sonnet-5-5"].capabilities, by_id["claude-haiku-4-5"].capabilities
    assert sonnet is not None
    assert haiku is not None
    assert sonnet.thinking.types.between_tools.supported is True
    assert supported(haiku.context_management.compact_20260112) is False


def supported(capability: CapabilitySupport | None) -> bool | None:
    return None if capability is None else capability.supported


async def test_server_compaction_on_sonnet_55_and_the_thinking_after_it_binds(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    edits: BetaContextManagementConfigParam = {
        "edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000}}]
    }
    long_history = [*user("word " * 200_000)]
    betas = ["compact-2026-01-12"]

    first = await client.beta.messages.create(
        model=SONNET, max_tokens=512, messages=long_history, context_management=edits, betas=betas
    )

    assert [block.type for block in first.content] == ["compaction", "thinking", "text"]
    assert fake.requests[-1].compacted
    follow = [*long_history, dumped(first), *user("continue")]
    second = await client.beta.messages.create(
        model=SONNET, max_tokens=512, messages=follow, context_management=edits, betas=betas
    )
    assert text_of(second.content[-1]) == "echo: continue"
    assert fake.requests[-1].thinking_checks == [
        {"path": "messages.1.content.1", "outcome": "kept", "reason": ""}
    ]


async def test_the_process_fake_scripts_thinking_and_switches_the_prefix_check() -> None:
    async with spawn_fake_anthropic() as remote:
        settings = await remote.set_thinking(
            enforce_prefix_check=False, default_display="summarized", high_tokens=40
        )
        await remote.script_reply(tool_uses=CALL, progress=PROGRESS)
        await remote.script_reply("Part", refusal={"category": None, "explanation": "Declined."})
        sdk = anthropic.AsyncAnthropic(api_key="test-key", base_url=remote.base_url, max_retries=0)
        try:
            called = await ask(sdk, user("where?"), tools=TOOLS)
            refused = await ask(sdk, user("x"))
            plain = await ask(sdk, user("hello"))
        finally:
            await sdk.close()

    assert settings == {"enforce_prefix_check": False, "default_display": "summarized", "high_tokens": 40}
    assert plain.usage.output_tokens == 40 + 4  # the thinking set for high, Sonnet 5.5's default
    assert thinking_of(called.content[1]).thinking == PROGRESS
    assert refused.stop_reason == "refusal"
    assert (refused.stop_details.category, refused.stop_details.explanation) == (None, "Declined.")
