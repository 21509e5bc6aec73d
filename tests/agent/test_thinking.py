"""Thinking blocks keep their binding across edits of the history: a block goes back only while nothing
before it changed, and every block after the first change goes with it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.thinking import STAMP, PrefixDigest, compacts, stamp, unbind
from agent.types import Block, Message


def request_digest(
    messages: Sequence[Message],
    *,
    model: str,
    system: Sequence[Block] | str,
    tools: Sequence[Mapping[str, Any]],
) -> str:
    """The digest of a request exactly as given (from its last compaction block on), computed apart from
    `unbind`'s walk: what the API binds the thinking of its response to."""
    digest = PrefixDigest(model, system, tools)
    for message in messages:
        if compacts(message.get("content")):
            digest = PrefixDigest(model, system, tools)
        digest.add(message)
    return digest.value()


MODEL = "claude-sonnet-5-5"
SYSTEM: list[dict[str, Any]] = [{"type": "text", "text": "You are helpful."}]
TOOLS: list[dict[str, Any]] = [
    {"name": "recall", "description": "search", "input_schema": {"type": "object"}}
]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def answer(
    history: list[dict[str, Any]], text: str, *, system: Any = SYSTEM, model: str = MODEL
) -> dict[str, Any]:
    """The assistant turn the API returns after `history`, stamped as the client stamps it."""
    digest = request_digest(history, model=model, system=system, tools=TOOLS)
    content = stamp(
        [{"type": "thinking", "thinking": "", "signature": f"sig-{text}"}, {"type": "text", "text": text}],
        digest,
    )
    return {"role": "assistant", "content": content}


def conversation() -> list[dict[str, Any]]:
    history = [user("one")]
    history.append(answer(history, "A1"))
    history.append(user("two"))
    history.append(answer(history, "A2"))
    history.append(user("three"))
    return history


def thinking_of(messages: list[dict[str, Any]]) -> list[str]:
    return [b["signature"] for m in messages for b in m["content"] if b.get("type") == "thinking"]


def test_an_unchanged_history_sends_every_thinking_block_back_without_stamps() -> None:
    sent = unbind(conversation(), model=MODEL, system=SYSTEM, tools=TOOLS)
    assert sent.dropped == 0
    assert thinking_of(sent.messages) == ["sig-A1", "sig-A2"]
    assert all(STAMP not in b for m in sent.messages for b in m["content"])


def test_moving_cache_markers_changes_nothing() -> None:
    history = conversation()
    history[0] = {
        "role": "user",
        "content": [{"type": "text", "text": "one", "cache_control": {"type": "ephemeral"}}],
    }
    system = [{**SYSTEM[0], "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    assert unbind(history, model=MODEL, system=system, tools=TOOLS).dropped == 0


def test_an_edited_message_drops_the_blocks_after_it_and_keeps_those_before() -> None:
    history = conversation()
    history[2] = user("two, edited by a compaction")
    sent = unbind(history, model=MODEL, system=SYSTEM, tools=TOOLS)
    assert thinking_of(sent.messages) == ["sig-A1"]
    assert sent.dropped == 1
    assert [b["text"] for b in sent.messages[3]["content"]] == ["A2"]  # the reply itself stays


def test_a_changed_system_prompt_or_model_drops_every_block() -> None:
    pinned = [{"type": "text", "text": "You are helpful.\n\nPinned: the launch is on Friday."}]
    assert unbind(conversation(), model=MODEL, system=pinned, tools=TOOLS).dropped == 2
    assert unbind(conversation(), model="claude-opus-5-5", system=SYSTEM, tools=TOOLS).dropped == 2


def test_a_dropped_block_invalidates_every_later_one() -> None:
    history = conversation()
    first = history[1]
    history[1] = {**first, "content": [b for b in first["content"] if b["type"] != "thinking"]}
    sent = unbind(history, model=MODEL, system=SYSTEM, tools=TOOLS)
    assert thinking_of(sent.messages) == []


def test_a_block_without_a_stamp_is_never_sent() -> None:
    history = [
        user("one"),
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "", "signature": "s"},
                {"type": "text", "text": "hi"},
            ],
        },
        user("two"),
    ]
    sent = unbind(history, model=MODEL, system=SYSTEM, tools=TOOLS)
    assert sent.dropped == 1
    assert sent.messages[1]["content"] == [{"type": "text", "text": "hi"}]


def test_an_assistant_turn_of_thinking_only_is_left_out_whole() -> None:
    history = [user("one")]
    digest = request_digest(history, model=MODEL, system=SYSTEM, tools=TOOLS)
    history.append(
        {
            "role": "assistant",
            "content": stamp([{"type": "thinking", "thinking": "", "signature": "s"}], "other"),
        }
    )
    history.append(user("two"))
    assert digest != "other"
    sent = unbind(history, model=MODEL, system=SYSTEM, tools=TOOLS)
    assert [m["role"] for m in sent.messages] == ["user", "user"]


def test_the_digest_a_response_is_bound_to_is_that_of_the_request_as_sent() -> None:
    history = conversation()
    history[2] = user("two, edited")
    sent = unbind(history, model=MODEL, system=SYSTEM, tools=TOOLS)
    assert sent.digest == request_digest(sent.messages, model=MODEL, system=SYSTEM, tools=TOOLS)
    assert sent.digest != request_digest(history, model=MODEL, system=SYSTEM, tools=TOOLS)


def compacting_answer(history: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant turn of a call in which the API compacted `history` (the block leads its reply)."""
    content = [
        {"type": "compaction", "content": "## Goal\nsummary of one, two and three"},
        {"type": "thinking", "thinking": "", "signature": "sig-C"},
        {"type": "text", "text": "C"},
    ]
    sent = unbind(history, model=MODEL, system=SYSTEM, tools=TOOLS)
    return {"role": "assistant", "content": stamp(content, sent.bound_for(content))}


def test_a_compaction_block_restarts_the_prefix_as_the_api_does() -> None:
    # the API sees nothing before the block: what it replaced may leave the window
    compacted = compacting_answer(conversation())
    window = [user("(earlier conversation continues)"), compacted, user("four")]
    sent = unbind(window, model=MODEL, system=SYSTEM, tools=TOOLS)
    assert (thinking_of(sent.messages), sent.dropped) == (["sig-C"], 0)
    assert sent.digest == request_digest(sent.messages, model=MODEL, system=SYSTEM, tools=TOOLS)
    # the system prompt is still part of the prefix
    other = [{"type": "text", "text": "You are brief."}]
    assert unbind(window, model=MODEL, system=other, tools=TOOLS).dropped == 1


def test_a_compaction_shown_as_text_or_a_failed_one_restarts_nothing() -> None:
    compacted = compacting_answer(conversation())
    as_text = [{"type": "text", "text": "[Summary] ..."}, *compacted["content"][1:]]
    failed = [{"type": "compaction", "content": None}, *compacted["content"][1:]]
    for content in (as_text, failed):
        window = [user("(earlier conversation continues)"), {"role": "assistant", "content": content}]
        assert unbind(window, model=MODEL, system=SYSTEM, tools=TOOLS).dropped == 1
