"""`context.engine: server` through the real gateway process and the real Telegram library (fakes as always):
the API compacts the conversation inside a reply call at the compressor's threshold (at the API's real
50,000-token floor), the user gets the reply and never the summary, everything before the compaction
block is archived (found by /stats as a `server` compaction, the summary call accounted), and the next
requests start at the block, far below the threshold, with no summary call of ours; on Sonnet 4.6 and on
Sonnet 5.5 (whose thinking is bound to the prefix the compaction replaced).
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import WorldFactory
from tests.e2e.test_telegram_context_contract import prompt_tokens, prose
from tests.fakes.anthropic import RecordedRequest

WINDOW = 110_000
THRESHOLD = WINDOW // 2  # 55,000: above the API's 50,000-token minimum trigger
PRIVATE = 3043
ALICE = 42


def blocks(record: RecordedRequest) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for message in record.body["messages"]:
        content = message["content"]
        found.extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
    return found


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "claude-sonnet-5-5"])
async def test_the_api_compacts_and_the_window_starts_at_its_block(
    telegram_world: WorldFactory, model: str
) -> None:
    async with telegram_world(
        model=model,
        context_window=WINDOW,
        TELEGRAM_ALLOWED_USERS=str(ALICE),
        TELEGRAM_ADMIN_IDS=str(ALICE),
        CONTEXT__ENGINE="server",
        COMPRESSION__PROTECT_LAST_N="2",
    ) as world:
        world.llm.keep_bodies = True
        for n in range(1, 8):
            world.tg.push_message(PRIVATE, prose(f"day{n}", 4_000), user_id=ALICE, first_name="Alice")
            await world.wait_replies(PRIVATE, n, timeout=30)
        replies = world.replies()
        compacted = [r for r in replies if r.compacted]
        assert len(compacted) == 1, [prompt_tokens(r) for r in replies]
        first = replies.index(compacted[0])
        edit = compacted[0].body["context_management"]["edits"][0]
        assert edit["trigger"] == {"type": "input_tokens", "value": THRESHOLD}
        assert "compact-2026-01-12" in compacted[0].headers["anthropic-beta"]
        assert not [r for r in world.llm.requests if r.kind == "summary"]  # no summary call of ours

        # the user saw replies, never the API's summary
        for sent in world.sent_to(PRIVATE):
            assert "## Goal" not in sent.visible_text

        # later requests start at the compaction block: day1 survives only inside the summary
        later = replies[first + 1 :]
        assert later
        for record in later:
            kinds = [b["type"] for b in blocks(record)]
            assert kinds.count("compaction") == 1, kinds
            before = kinds[: kinds.index("compaction")]
            assert all(k == "text" for k in before)
            texts = [str(b.get("text", "")) for b in blocks(record) if b["type"] == "text"]
            assert not any(t.startswith("day1:") for t in texts)
            assert prompt_tokens(record) < THRESHOLD

        world.tg.push_message(PRIVATE, "/stats", user_id=ALICE, first_name="Alice")
        stats = await world.wait_replies(PRIVATE, len(world.sent_to(PRIVATE)) + 1, timeout=30)
        text = stats[-1].visible_text
        assert "server" in text.split("Compactions:")[1], text
