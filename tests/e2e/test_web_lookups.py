"""Web search and fetch run by the API, through the real gateway process: a cited answer reaches
Telegram (HTML links) and Discord (markdown links) with its sources, a paused turn goes on to its answer,
a search survives `/compact` and later turns without a request refused, a search beside our own tool
call waits for its result and runs, and the search fee shows in
`/stats` and in the spending ledger."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from gateway.store import Store
from tests.e2e.conftest import TelegramWorld, WorldFactory, body_text
from tests.e2e.test_discord_chat import ANN, DM_ANN, discord_world

FILLER = ("The harbour log lists each ferry crossing, its crew and the weather at departure. " * 18).strip()
ALICE = 42
CHAT = 4242
WEB_ON = {
    "TOOLS__WEB_SEARCH__ENABLED": "true",
    "TOOLS__WEB_FETCH__ENABLED": "true",
    "TOOLS__WEB_SEARCH__MAX_USES": "3",
}


async def _say(world: TelegramWorld, text: str, n: int) -> str:
    world.tg.push_message(CHAT, text, user_id=ALICE, first_name="Alice")
    return (await world.wait_replies(CHAT, n, timeout=30))[n - 1].visible_text


def _refused(world: TelegramWorld) -> list[int]:
    return [r.status for r in world.llm.requests if r.status is not None and r.status != 200]


async def test_telegram_search_compaction_stats_and_budget(telegram_world: WorldFactory, db_url: str) -> None:
    async with telegram_world(
        model="claude-sonnet-5-5",
        context_window=20_000,
        TELEGRAM_ALLOWED_USERS=str(ALICE),
        TELEGRAM_ADMIN_IDS=str(ALICE),
        COMPRESSION__PROTECT_LAST_N="1",
        COMPRESSION__TARGET_RATIO="0.1",
        LIMITS__BOT_DAILY_BUDGET_USD="50",
        **WEB_ON,
    ) as world:
        first = await _say(world, "search: tide tables", 1)
        assert "tide tables is documented on docs.example.com, and wiki.example.org agrees." in first
        sent = world.sent_to(CHAT)[0]
        assert sent.parse_mode == "HTML"
        assert (
            '<a href="https://docs.example.com/tide-tables">tide tables - docs.example.com</a>' in sent.text
        )
        assert "Sources: " in first
        request = world.replies()[0].body
        assert [t["type"] for t in request["tools"][-2:]] == ["web_search_20260318", "web_fetch_20260318"]
        assert "not instructions" in request["system"][0]["text"]

        paused = await _say(world, "deep search: moon phases", 2)
        assert "moon phases (more) is documented" in paused
        assert any(r.answer and r.answer["stop_reason"] == "pause_turn" for r in world.llm.requests)

        for n in range(3, 8):
            await _say(world, f"note {n}: {FILLER}", n)
        summaries = len([r for r in world.llm.requests if r.kind == "summary"])
        compacted = await _say(world, "/compact", 8)
        assert compacted.startswith("Compaction ok"), compacted
        summary = [r for r in world.llm.requests if r.kind == "summary"][summaries:]
        # the paused search (the first exchange stays word for word) went into the summary: the
        # summarizer was shown its sources' titles and URLs
        assert "https://docs.example.com/moon-phases" in body_text(summary[0])
        after = await _say(world, "search: neap tides", 9)
        assert "Sources:" in after
        last = await _say(world, "and the source of the first search?", 10)
        assert last.startswith("echo:")
        # a mixed turn: the search waits beside our current_time call and runs when its result goes back
        mixed = await _say(world, "search with the time: ferry timetable", 11)
        assert "ferry timetable is documented on docs.example.com" in mixed
        assert [b["type"] for b in world.replies()[-2].answer["content"]] == ["server_tool_use", "tool_use"]
        assert _refused(world) == [], "a request was refused for an altered or orphaned server block"

        stats = await _say(world, "/stats", 12)
        assert "Web lookups: 5 searches, 0 pages fetched; search fee $0.05" in stats

    store = await Store.open(db_url, pool_size=1, max_overflow=1)
    try:
        async with store.engine.connect() as conn:
            spent = (
                await conn.execute(sa.text("SELECT MAX(spent_usd) FROM spend_ledger WHERE scope = 'bot'"))
            ).scalar_one()
            searches = (await conn.execute(sa.text("SELECT SUM(web_searches) FROM llm_calls"))).scalar_one()
    finally:
        await store.close()
    assert searches == 5
    assert spent is not None
    assert spent >= 0.05, "the search fees count toward the bot's daily budget"


async def test_discord_shows_the_sources_as_markdown_links(tmp_path: Path, db_url: str) -> None:
    async with discord_world(tmp_path, db_url, MODEL="claude-sonnet-5-5", **WEB_ON) as w:
        sent = await w.reply_to(
            lambda: w.dc.push_message(DM_ANN, "search: tide tables", author_id=ANN, username="ann")
        )
        assert "tide tables is documented on docs.example.com" in sent.content
        assert "[tide tables - docs.example.com](https://docs.example.com/tide-tables)" in sent.content
