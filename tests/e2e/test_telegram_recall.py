"""Recall through the real gateway process: an earlier session's message is found by a question worded
differently (semantic ranking from the fake embeddings endpoint, fused with keywords), a summary's
originals come back page by page, and a dead embeddings endpoint only costs the semantic part."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.e2e.conftest import TelegramWorld, WorldFactory, tool_results
from tests.fakes.embeddings import FakeEmbeddings

ALICE = 4242
CAR = "Big news: I bought a red Volvo estate this morning"
PADDING = ("The replica lag stayed low and the nightly backups finished on time. " * 16).strip()


@pytest.fixture
async def embeddings() -> AsyncIterator[FakeEmbeddings]:
    async with FakeEmbeddings() as fake:
        yield fake


async def _say(world: TelegramWorld, text: str, n: int) -> str:
    world.tg.push_message(ALICE, text, user_id=ALICE, first_name="Alice")
    return (await world.wait_replies(ALICE, n, timeout=30))[n - 1].visible_text


def _last_tool_result(world: TelegramWorld) -> str:
    return str(tool_results(world.replies()[-1])[-1]["content"])


async def test_recall_across_sessions_semantic_and_drill_down(
    telegram_world: WorldFactory, embeddings: FakeEmbeddings
) -> None:
    async with telegram_world(
        TELEGRAM_ALLOWED_USERS=str(ALICE),
        TELEGRAM_ADMIN_IDS=str(ALICE),
        EMBEDDINGS__PROVIDER="openai",
        EMBEDDINGS__BASE_URL=embeddings.url,
        EMBEDDINGS__MODEL="fake-embed",
        EMBEDDINGS__API_KEY=embeddings.api_key,
        # A small window and tail, so /compact has a middle to summarise after a few notes.
        MODEL_CONTEXT_LENGTH="20000",
        COMPRESSION__TARGET_RATIO="0.1",
        COMPRESSION__PROTECT_LAST_N="2",
    ) as world:
        n = 1
        await _say(world, CAR, n)
        await embeddings_saw(world, embeddings, CAR)
        n += 1
        assert (await _say(world, "/new", n)).startswith("Started a fresh conversation")

        # A question sharing no word with the message: the fake model maps automobile/car and
        # purchase/bought to one concept, which is what the semantic ranking adds.
        world.llm.script_reply(tool_uses=[{"name": "recall", "input": {"query": "automobile purchase"}}])
        world.llm.script_reply("A red Volvo.")
        n += 1
        assert (await _say(world, "Which automobile did I purchase?", n)).endswith("A red Volvo.")
        found = _last_tool_result(world)
        assert CAR in found
        assert 'session="1 (ended' in found

        # Drill-down: compact the new session, then list what the summary replaced.
        for i in range(4):
            n += 1
            await _say(world, f"note {i}: the garden shed needs a new roof before winter. {PADDING}", n)
        n += 1
        assert (await _say(world, "/compact", n)).startswith("Compaction ok")
        world.llm.script_reply(tool_uses=[{"name": "recall", "input": {"originals": True}}])
        world.llm.script_reply("Listed.")
        n += 1
        await _say(world, "what exactly did I say before the summary?", n)
        originals = _last_tool_result(world)
        assert originals.startswith("Summary #")
        assert "note 0: the garden shed" in originals

        # The endpoint dies: recall still answers from keywords; the turn is not failed.
        embeddings.fail(500, times=1000)
        world.llm.script_reply(tool_uses=[{"name": "recall", "input": {"query": "red Volvo"}}])
        world.llm.script_reply("Still found it.")
        n += 1
        assert (await _say(world, "remind me what car it was", n)).endswith("Still found it.")
        assert CAR in _last_tool_result(world)
        await world.gw.wait_log("failed for a recall query")
        assert "Traceback" not in world.gw.log_text()


async def embeddings_saw(world: TelegramWorld, embeddings: FakeEmbeddings, text: str) -> None:
    """Wait until the background worker has embedded `text` (it never delays the reply itself)."""
    try:
        await world.tg.wait_for(lambda: text in embeddings.texts(), 20)
    except TimeoutError:
        raise AssertionError(f"{text!r} was not embedded:\n{world.gw.log_text()}") from None
