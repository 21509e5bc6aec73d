"""Commands through a real Gateway: /help, /new, /stats, /compact and who may use them."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from gateway.commands.menu import help_text
from gateway.commands.stats_report import cache_hit_text, web_lines
from gateway.platforms.base import Author
from gateway.store import UsageTotals
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import Bot, running_bot
from tests.support.memory_adapter import ADMIN, ALICE, group_chat

GROUP = group_chat("-300", "Ops")
SMALL: dict[str, Any] = {
    "model_context_length": 5120,
    # room for the chatter below without an automatic compaction: these scenarios compact by hand
    "compression": {"protect_last_n": 2, "enabled": False},
    "prompt_caching": {"cache_ttl": "5m"},  # these scenarios rely on a warm fixed-TTL cache
}


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def bot(fake: FakeAnthropic, sqlite_url: str) -> AsyncIterator[Bot]:
    async with running_bot(fake, sqlite_url, **SMALL) as running:
        yield running


async def chatter(bot: Bot, who: Author = ADMIN, n: int = 6) -> None:
    for i in range(n):
        await bot.adapter.say(f"fact{i}: " + " ".join(f"item{j}" for j in range(150)), user=who)


async def only(bot: Bot, text: str, **kwargs: object) -> str:
    replies = await bot.adapter.say(text, **kwargs)
    assert len(replies) == 1, replies
    return replies[0].text


async def test_compact_with_focus_reports_numbers_and_undo_restores(bot: Bot, fake: FakeAnthropic) -> None:
    await chatter(bot)
    before = len(await bot.window("telegram", "1"))
    text = await only(bot, "/compact keep the item numbers", user=ADMIN)
    assert text.startswith("Compaction ok: ")
    assert "messages" in text
    assert "tokens" in text
    assert " s." in text
    summary = [r for r in fake.requests if r.kind == "summary"][-1]
    assert "keep the item numbers" in json.dumps(summary.body)
    metrics = bot.gateway.metrics
    assert metrics.compactions.labels(trigger="manual", outcome="ok")._value.get() == 1
    assert metrics.llm_calls.labels(purpose="summary")._value.get() >= 1
    assert len(await bot.window("telegram", "1")) < before
    undo = await only(bot, "/compact undo", user=ADMIN)
    assert undo.startswith("Undid the manual compaction")
    assert len(await bot.window("telegram", "1")) == before
    assert "Nothing to undo" in await only(bot, "/compact undo", user=ADMIN)


async def test_stats_shows_bar_counts_cache_and_compactions(bot: Bot) -> None:
    await chatter(bot, n=6)
    await bot.adapter.say("/compact", user=ADMIN)
    text = await only(bot, "/stats detail", user=ADMIN)
    assert "Context: [" in text
    assert "%" in text
    assert "Messages: " in text
    assert "archived" in text
    assert "Cache (recent): read" in text
    assert "Cache (lifetime): read" in text
    assert "Compactions: manual" in text
    assert "Last compaction: manual" in text
    assert "paused" not in text


async def test_stats_says_when_automatic_compaction_is_paused_and_why(bot: Bot) -> None:
    await chatter(bot, n=3)
    state = {"paused_at_tokens": 9_000, "pause_reason": "nothing to compact between head and tail"}
    async with bot.store.engine.begin() as conn:
        await conn.execute(text("UPDATE sessions SET engine_state = :s"), {"s": json.dumps(state)})
    stats = await only(bot, "/stats", user=ADMIN)
    assert "Automatic compaction: paused at 9,000 tokens" in stats
    assert "nothing to compact between head and tail" in stats
    assert "resumes by itself" in stats


async def test_stats_all_only_in_private_chats(fake: FakeAnthropic, sqlite_url: str) -> None:
    async with running_bot(fake, sqlite_url, telegram_allowed_users=frozenset({42, 1})) as bot:
        await bot.adapter.say("hello", user=ALICE)
        private = await only(bot, "/stats all", user=ADMIN)
        assert private.startswith("Stats across all chats")
        assert "telegram:42" in private
        refused = await only(bot, "/stats all", user=ADMIN, chat=GROUP, mentions_bot=True)
        assert "only works in a private chat" in refused


async def test_non_admin_is_refused_and_nothing_changes(bot: Bot) -> None:
    await chatter(bot, who=ALICE, n=4)
    count = await bot.scalar("SELECT count(*) FROM compactions")
    for command in ("/stats", "/compact", "/compact undo"):
        assert "for admins of this bot only" in await only(bot, command, user=ALICE)
    assert await bot.scalar("SELECT count(*) FROM compactions") == count
    assert await bot.scalar("SELECT count(*) FROM messages WHERE state = 'archived'") == 0


async def test_anonymous_admin_and_forged_name_are_refused(bot: Bot) -> None:
    anonymous = Author(user_id="1", display_name="Admin", is_anonymous_admin=True)
    forged = Author(user_id="43", display_name="Admin")
    # no verifiable user behind an anonymous admin: not even allowed to talk, so the bot stays silent
    assert await bot.adapter.say("/compact", user=anonymous, chat=GROUP, mentions_bot=True) == []
    text = await only(bot, "/compact", user=forged, chat=GROUP, mentions_bot=True)
    assert "for admins of this bot only" in text
    assert await bot.scalar("SELECT count(*) FROM compactions") == 0


async def test_help_lists_only_what_the_caller_may_use(bot: Bot) -> None:
    user_help = await only(bot, "/help", user=ALICE)
    admin_help = await only(bot, "/help", user=ADMIN)
    assert "/new" in user_help
    assert "/stats" not in user_help
    assert "/compact" not in user_help
    assert "/stats" in admin_help
    assert "/compact" in admin_help


def test_the_consoles_help_fits_the_terminal_chat() -> None:
    text = help_text(is_admin=True, platform="console")
    assert "group" not in text
    assert "/file PATH [question]" in text
    assert "/stats [detail | all]" in text
    assert "Ctrl-D quits" in text
    chat_help = help_text(is_admin=True, platform="telegram")
    assert "in groups, mention me" in chat_help
    assert "/file" not in chat_help


async def test_new_starts_fresh_and_keeps_the_old_session(bot: Bot) -> None:
    await bot.adapter.say("remember apples", user=ALICE)
    text = await only(bot, "/new", user=ALICE)
    assert "kept" in text
    await bot.adapter.say("what did I say?", user=ALICE)
    assert "apples" not in json.dumps(bot.replies()[-1].body)
    assert await bot.scalar("SELECT count(*) FROM sessions") == 2
    assert await bot.scalar("SELECT count(*) FROM messages WHERE text = 'remember apples'") == 1


async def test_unknown_command_and_command_for_another_bot(bot: Bot) -> None:
    assert "Unknown command /frobnicate" in await only(bot, "/frobnicate", user=ALICE)
    assert await bot.adapter.say("/stats@other_bot", user=ADMIN, chat=GROUP) == []
    assert await bot.adapter.say("/stats@other_bot", user=ADMIN) == []
    assert bot.replies() == []


async def test_a_redelivered_command_runs_once(bot: Bot) -> None:
    await chatter(bot)
    first = await bot.adapter.say("/compact", user=ADMIN, message_id="cmd-1")
    again = await bot.adapter.say("/compact", user=ADMIN, message_id="cmd-1")
    assert len(first) == 1
    assert again == []
    assert await bot.scalar("SELECT COUNT(*) FROM compactions WHERE \"trigger\" = 'manual'") == 1


async def test_the_summary_call_of_a_compaction_is_accounted(bot: Bot) -> None:
    await chatter(bot)
    assert (await only(bot, "/compact", user=ADMIN)).startswith("Compaction ok")
    summaries = await bot.scalar("SELECT COUNT(*) FROM llm_calls WHERE purpose = 'summary'")
    cost = await bot.scalar("SELECT SUM(cost_usd) FROM llm_calls WHERE purpose = 'summary'")
    assert summaries == 1
    assert cost > 0


async def test_stats_shows_money_spent_on_cache_writes_never_read(bot: Bot, fake: FakeAnthropic) -> None:
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import select, update

    from gateway.store.rows import llm_calls

    await chatter(bot, n=2)
    async with bot.store.engine.begin() as conn:
        ids = [r.id for r in (await conn.execute(select(llm_calls.c.id).order_by(llm_calls.c.id))).all()]
        now = datetime.now(UTC)
        # the second reply came 7 minutes after the first: the first one's 5-minute write was never read
        for call_id, at in zip(ids, (now - timedelta(minutes=9), now - timedelta(minutes=2)), strict=True):
            await conn.execute(update(llm_calls).where(llm_calls.c.id == call_id).values(created_at=at))
    written = [r.usage["cache_creation_input_tokens"] for r in fake.requests if r.kind == "reply"]
    text = await only(bot, "/stats detail", user=ADMIN)
    assert f"on writes never read ({written[0]:,} tokens)" in text
    assert "Cache waste: $" in text
    assert "reply hit ratio" in text
    assert "Cache waste: $" in await only(bot, "/stats all", user=ADMIN)


PLUGINS = Path(__file__).resolve().parents[2] / "plugins"


async def test_compact_works_with_a_plugin_engine(fake: FakeAnthropic, sqlite_url: str) -> None:
    """`context.engine: keeper` comes from plugins/context_engine/keeper/ (it never calls a summarizer)."""
    settings = {**SMALL, "context": {"engine": "keeper", "plugins_dir": str(PLUGINS)}}
    async with running_bot(fake, sqlite_url, **settings) as bot:
        await chatter(bot, n=5)
        text = await only(bot, "/compact", user=ADMIN)
        assert text.startswith("Compaction ok: 10→"), text
        assert not [r for r in fake.requests if r.kind == "summary"]
        window = await bot.window("telegram", ADMIN.user_id)
        assert window[0].text.startswith("fact0:")
        assert "earlier messages are archived; search them with the recall tool" in window[1].text
        assert window[-1].text.startswith("echo: fact4")
        assert await bot.scalar("SELECT count(*) FROM messages WHERE state = 'archived'") > 0
        reply = await only(bot, "what was fact2?", user=ADMIN)
        assert reply.startswith("echo: ")
        assert "earlier messages are archived" in json.dumps(fake.requests[-1].body)


async def test_stats_shows_what_fills_the_window(bot: Bot) -> None:
    await only(bot, "/pin Deploys happen on Tuesdays", user=ADMIN)
    await chatter(bot, n=3)
    stats = await only(bot, "/stats detail", user=ADMIN)
    line = next(x for x in stats.splitlines() if x.startswith("Window by part"))
    assert re.search(r"system prompt [\d,]+", line), line
    assert re.search(r"tool definitions [\d,]+", line), line
    assert re.search(r"pins \(1\) [1-9][\d,]*", line), line
    assert re.search(r"user messages [1-9][\d,]*", line), line
    assert re.search(r"assistant replies [1-9][\d,]*", line), line
    assert "Largest items:" in stats
    assert re.search(r"#\d+ user messages from Admin: [\d,]+ tokens — “fact\d: item0", stats), stats


async def test_compact_on_a_short_conversation_says_why_and_what_to_do(bot: Bot) -> None:
    await bot.adapter.say("just one question", user=ADMIN)
    text = await only(bot, "/compact", user=ADMIN)
    assert re.match(r"Nothing to compact yet: the context is [\d,]+ tokens; the first exchange", text), text
    assert "nothing came after it to summarize yet" in text


async def test_compact_on_a_short_chat_names_the_tail_budget_and_its_setting(bot: Bot) -> None:
    for question in ("hello", "how are you", "what time is it"):
        await bot.adapter.say(question, user=ADMIN)
    text = await only(bot, "/compact", user=ADMIN)
    assert re.search(r"the newest ~[\d,]+ tokens \(the last 4 messages\) are kept word for word", text), text
    # 5,120-token window x compression.threshold 50% = 2,560; x compression.target_ratio 20% = 512
    assert "budget of 512 tokens (20% of the 2,560-token compaction threshold" in text, text
    assert "lower compression.target_ratio" in text
    assert "protect_last_n" not in text


async def test_compact_names_protect_last_n_when_it_is_what_keeps_the_tail(bot: Bot) -> None:
    await chatter(bot, n=2)
    text = await only(bot, "/compact", user=ADMIN)
    assert "(the last 2 messages) are kept word for word" in text, text
    assert "at least the last 2 messages (compression.protect_last_n)" in text
    assert "lower compression.protect_last_n" in text


async def test_stats_has_one_headline_for_the_context_and_explains_the_rest_in_detail(bot: Bot) -> None:
    await chatter(bot, n=2)
    short = await only(bot, "/stats", user=ADMIN)
    session = await bot.store.active_session(await bot.chat_pk("telegram", ADMIN.user_id))
    # the thresholds' count: the last reported size + calibrated estimates since
    scale = bot.gateway.calibration.apply
    tokens, since = session.context_tokens(scale), scale(session.tokens_since_call)
    headline = f"({tokens:,} of 5,120 tokens)"
    assert headline in short, short
    assert "Prompt:" not in short
    assert "Window by part" not in short
    assert "Cache (recent)" not in short
    assert "Prompt cache: " in short
    cache = next(x for x in short.splitlines() if x.startswith("Prompt cache: "))
    assert cache.endswith("of prompt tokens read from cache over 2 calls"), cache
    assert cache.count("%") == 1  # the recent calls are all the calls: said once
    assert short.endswith(
        "/stats detail shows how the context size is counted, what fills it, and the cache's numbers"
    )
    detail = await only(bot, "/stats detail", user=ADMIN)
    assert detail.startswith("Stats for this chat (detail)\n")
    assert headline in detail
    assert (
        f"Context size: {tokens:,} tokens = {session.last_prompt_tokens:,} counted by the API "
        f"for the last request + ~{since:,} estimated for what was added since"
    ) in detail
    assert f"Window by part: the {tokens:,} tokens of the context size" in detail
    assert await only(bot, "/stats everything", user=ADMIN) == "Usage: /stats, /stats detail or /stats all"


async def test_a_manual_compact_with_nothing_to_do_says_so_in_plain_words_and_is_not_counted(
    bot: Bot,
) -> None:
    await chatter(bot, n=2)
    first = await only(bot, "/compact", user=ADMIN)
    assert re.match(r"Nothing to compact yet: the context is [\d,]+ tokens; ", first), first
    second = await only(bot, "/compact keep the facts", user=ADMIN)
    assert second == first
    assert "between head and tail" not in second
    assert "aborted" not in second
    stats = await only(bot, "/stats", user=ADMIN)
    assert "Compactions: none yet" in stats, stats


async def test_stats_stats_detail_and_compact_show_the_same_context_size(bot: Bot) -> None:
    await chatter(bot, n=2)
    headline = re.search(r"full \(([\d,]+) of 5,120 tokens\)", await only(bot, "/stats", user=ADMIN))
    assert headline is not None
    size = headline.group(1)
    detail = await only(bot, "/stats detail", user=ADMIN)
    assert f"full ({size} of 5,120 tokens)" in detail
    assert f"Context size: {size} tokens = " in detail
    parts = next(x for x in detail.splitlines() if x.startswith("Window by part"))
    assert f"the {size} tokens of the context size" in parts, parts
    listed = parts.split("): ", 1)[1].split(", ")
    shares = [int(part.rsplit(" ", 1)[1].replace(",", "")) for part in listed]
    assert sum(shares) == int(size.replace(",", "")), parts
    compact = await only(bot, "/compact", user=ADMIN)
    assert compact.startswith(f"Nothing to compact yet: the context is {size} tokens"), compact


async def test_compact_names_the_context_size_before_and_after_as_stats_counts_it(bot: Bot) -> None:
    await chatter(bot)
    headline = re.search(r"full \(([\d,]+) of", await only(bot, "/stats", user=ADMIN))
    assert headline is not None
    text = await only(bot, "/compact", user=ADMIN)
    after = re.search(r"full \(([\d,]+) of", await only(bot, "/stats", user=ADMIN))
    assert after is not None
    assert (
        f"the context went from {headline.group(1)} to {after.group(1)} tokens (as /stats counts it)" in text
    )


def test_the_cache_line_names_recent_and_lifetime_only_when_they_differ() -> None:
    recent = UsageTotals(calls=20, input_tokens=100, cache_read_tokens=300)
    total = UsageTotals(calls=120, input_tokens=600, cache_read_tokens=400)
    assert cache_hit_text(recent, total) == (
        "75% of prompt tokens read from cache over the last 20 calls, 40% over all 120"
    )
    assert cache_hit_text(total, total) == "40% of prompt tokens read from cache over 120 calls"


async def test_stats_and_metrics_show_semantic_recall(fake: FakeAnthropic, sqlite_url: str) -> None:
    from tests.fakes.embeddings import FakeEmbeddings

    async with FakeEmbeddings() as embeddings:
        semantic = {"provider": "voyage", "base_url": embeddings.url, "api_key": embeddings.api_key}
        async with running_bot(fake, sqlite_url, embeddings=semantic, **SMALL) as bot:
            await bot.adapter.say("we bought an automobile", user=ADMIN)
            stats = await only(bot, "/stats", user=ADMIN)
            line = next(x for x in stats.splitlines() if x.startswith("Semantic recall: "))
            assert line.startswith("Semantic recall: on (voyage-4-lite); ")
            assert "messages waiting to be embedded" in line
            assert "queries: 0 ranked, 0 timed out, 0 failed, 0 skipped while paused" in line
            assert "Semantic recall: on" in await only(bot, "/stats all", user=ADMIN)
            exposed = bot.gateway.metrics.exposition().decode()
            assert "gateway_embeddings_breaker_open 0.0" in exposed
            assert "gateway_embeddings_backlog " in exposed
            assert 'gateway_recall_semantic_queries_total{outcome="timeout"} 0.0' in exposed
        async with running_bot(fake, sqlite_url, **SMALL) as plain:
            assert "Semantic recall" not in await only(plain, "/stats", user=ADMIN)


def test_web_lines_show_the_lookups_and_the_search_fee_only_when_there_were_some() -> None:
    assert web_lines(0, 0) == []
    (line,) = web_lines(12, 1)
    assert line.render() == "Web lookups: 12 searches, 1 page fetched; search fee $0.12"
