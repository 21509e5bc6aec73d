"""Tool-pair repair: results whose call is gone become text, calls whose result is lost get a stub."""

from __future__ import annotations

from agent.compaction.engine import Outcome
from agent.messages import ORPHAN_PREFIX, REMOVED_RESULT, repair_tool_pairs
from agent.types import Message, blocks_of, tool_result_ids
from tests.agent.compressor_support import assert_valid_pairs, assistant, call, make, plain, results, user


async def test_orphan_results_become_text_and_lost_results_are_stubbed() -> None:
    history: list[Message] = [
        *plain(6),
        call(("lost", "fetch")),
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "never mind that"},
                {"type": "tool_result", "tool_use_id": "ghost", "content": "from a call that is gone"},
            ],
        },
        assistant("ok"),
        user("and?"),
        call(("pending", "fetch")),
    ]
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=5)
    result = await engine.compress(history, force=True)
    assert result.outcome is Outcome.OK
    assert result.stubbed_tool_ids == ("lost",)
    flat = [b for m in result.messages for b in blocks_of(m)]
    assert {"type": "tool_result", "tool_use_id": "lost", "content": REMOVED_RESULT} in flat
    assert all(b.get("tool_use_id") != "ghost" for b in flat)
    assert any(str(b.get("text", "")).startswith(ORPHAN_PREFIX) for b in flat)
    assert result.messages[-1] == history[-1]  # a call awaiting its result is not a lost one
    assert_valid_pairs(result.messages[:-1])


def test_repair_gives_lost_results_a_message_of_their_own_between_two_assistant_turns() -> None:
    broken = [user("go"), call(("x", "ls"), ("y", "ls")), assistant("where did the output go?"), user("?")]
    repaired, report = repair_tool_pairs(broken)
    assert report.stubbed_use_ids == ("x", "y")
    assert report.inserted_at == (2,)
    assert [m["role"] for m in repaired] == ["user", "assistant", "user", "assistant", "user"]
    assert tool_result_ids(repaired[2]) == ["x", "y"]
    assert broken[2] == assistant("where did the output go?")


def test_repair_keeps_an_orphaned_result_as_text() -> None:
    broken = [user("go"), assistant("hm"), results(("ghost", "old")), assistant("ok")]
    repaired, report = repair_tool_pairs(broken)
    assert report.orphaned_result_ids == ("ghost",)
    assert repaired[2] == {"role": "user", "content": [{"type": "text", "text": f"{ORPHAN_PREFIX} old"}]}
