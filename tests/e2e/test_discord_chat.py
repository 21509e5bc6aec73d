"""The real gateway process chatting on Discord through discord.py, the fake Discord and fake Anthropic API.

Direct messages, a guild channel where only mentions and replies are answered, a thread as its own
session, long replies split under 2000 characters, mentions that never ping, an LLM outage and a
gateway RESUME that replays a message: what people in the chat would see, and what the bot stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from gateway.store import Store, StoredMessage
from tests.e2e.harness import GatewayProcess, base_env, running_gateway
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.discord import FakeDiscord, SentMessage

TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAy.e2e.discord-bot-token"
ADMIN, ANN, BOB, CAROL = 7001, 7002, 7003, 7004
GUILD, GENERAL, THREAD = 9100, 9101, 9102
DM_ANN, DM_ADMIN = 9201, 9202
REPLY_TIMEOUT = 25.0
SMALL_WINDOW = {
    "MODEL_CONTEXT_LENGTH": "20000",
    "COMPRESSION__TARGET_RATIO": "0.1",
    "COMPRESSION__PROTECT_LAST_N": "2",
}
"""A window small enough that /compact has a middle to summarise after a few notes."""
FILLER = ("Details: the replica lag stayed low and the nightly backups finished on time. " * 16).strip()


@dataclass
class World:
    llm: FakeAnthropic
    dc: FakeDiscord
    gw: GatewayProcess
    store: Store

    async def reply_to(self, push: Callable[[], int], *, timeout: float = REPLY_TIMEOUT) -> SentMessage:
        """Push one inbound event and return the next message the bot makes visible."""
        before = len(self.dc.sent)
        push()
        return (await self.dc.wait_sent(before + 1, timeout=timeout))[before]

    async def rows(self, chat_id: int, thread_id: int | None = None) -> list[StoredMessage]:
        """The active window the gateway stored for a Discord chat (a DM or a guild channel/thread)."""
        kind = "group" if chat_id in (GENERAL, THREAD) else "private"
        chat = await self.store.get_or_create_chat(
            "discord", str(chat_id), str(thread_id) if thread_id else None, kind=kind, title=None
        )
        session = await self.store.active_session(chat.id)
        return await self.store.load_window(session.id)

    async def wait_rows(
        self, chat_id: int, predicate: Callable[[list[StoredMessage]], bool], *, thread_id: int | None = None
    ) -> list[StoredMessage]:
        """Poll the store (up to ~10 s) until the chat's stored window satisfies `predicate`."""
        for _ in range(100):
            rows = await self.rows(chat_id, thread_id)
            if predicate(rows):
                return rows
            await asyncio.sleep(0.1)
        raise AssertionError(f"stored rows never matched: {[r.text for r in rows]}")

    def last_request_text(self) -> str:
        """The conversation the model was shown in the newest reply request, as JSON text."""
        replies = [r for r in self.llm.requests if r.kind == "reply"]
        return json.dumps(replies[-1].body["messages"], ensure_ascii=False)


@contextlib.asynccontextmanager
async def discord_world(tmp_path: Path, db_url: str, **extra_env: str) -> AsyncIterator[World]:
    """Fakes, a guild with #general and a thread, and the gateway process configured for them."""
    async with FakeAnthropic() as llm, FakeDiscord(token=TOKEN) as dc:
        dc.add_guild(GUILD, "Test Guild", channels=[(GENERAL, "general")])
        dc.add_thread(GUILD, GENERAL, THREAD, "plans")
        env = base_env(
            database_url=db_url,
            anthropic_url=llm.base_url,
            tmp=tmp_path,
            DISCORD_BOT_TOKEN=TOKEN,
            DISCORD_API_BASE_URL=dc.api_base,
            DISCORD_GATEWAY_URL=dc.gateway_url,
            DISCORD_ADMIN_IDS=str(ADMIN),
            DISCORD_ALLOWED_USERS=f"{ANN},{BOB},{CAROL}",
            **extra_env,
        )
        store = await Store.open(db_url, pool_size=1, max_overflow=1)
        try:
            async with running_gateway(env, cwd=tmp_path) as gw:
                yield World(llm, dc, gw, store)
            gw.assert_no_secret(TOKEN, "test-key")
            assert dc.unexpected == [], "the gateway called Discord endpoints the fake does not know"
        finally:
            await store.close()


def assert_never_pings(sent: SentMessage) -> None:
    """The send's allowed_mentions forbid @everyone/@here, roles and pinging the replied-to author."""
    mentions = sent.allowed_mentions
    assert mentions is not None, "every send must say whom it may ping"
    assert "everyone" not in mentions.get("parse", [])
    assert "roles" not in mentions.get("parse", [])
    assert not mentions.get("roles")
    assert mentions.get("replied_user", False) is False, "a reply must not ping its author"


async def test_direct_messages_outage_and_resume_replay(tmp_path: Path, db_url: str) -> None:
    async with discord_world(tmp_path, db_url) as w:
        dc, llm = w.dc, w.llm

        # A DM is answered as a reply, with typing shown first, and the reply pings nobody.
        first = await w.reply_to(
            lambda: dc.push_message(DM_ANN, "hello there", author_id=ANN, username="ann")
        )
        assert first.content == "echo: hello there"
        assert first.channel_id == DM_ANN
        assert DM_ANN in dc.typing_calls
        assert first.message_reference is not None
        assert_never_pings(first)

        # The LLM is down: the user is told the message was kept; the next turn includes it.
        llm.script_fault("overloaded", times=-1, retry_after=0.1)
        told = await w.reply_to(
            lambda: dc.push_message(DM_ANN, "what is 6 times 7?", author_id=ANN, username="ann")
        )
        assert "overloaded" in told.content
        assert "saved" in told.content
        llm.clear_faults()
        back = await w.reply_to(lambda: dc.push_message(DM_ANN, "retry", author_id=ANN, username="ann"))
        # The kept message and the new one are answered together.
        assert back.content == "echo: what is 6 times 7? retry"
        rows = await w.rows(DM_ANN)
        assert [r.text for r in rows if r.role == "user"] == ["hello there", "what is 6 times 7?", "retry"]

        # A RESUME that replays already-delivered dispatches (at-least-once delivery). Whether or not the
        # client had seen the echo of the bot's reply, the last two dispatches include the user's message.
        sent_before = len(dc.sent)
        mid = dc.push_message(DM_ANN, "remember code 4417", author_id=ANN, username="ann")
        answered = (await dc.wait_sent(sent_before + 1, timeout=REPLY_TIMEOUT))[sent_before]
        assert answered.content == "echo: remember code 4417"
        requests_before = len(llm.requests)
        await dc.disconnect(code=4000, replay_last=2)
        await w.gw.wait_log(rf"duplicate delivery of {mid} ", timeout=REPLY_TIMEOUT)
        assert dc.resumes
        assert dc.replayed
        rows = await w.rows(DM_ANN)
        assert [r.platform_message_id for r in rows].count(str(mid)) == 1
        assert len(dc.sent) == sent_before + 1
        assert len(llm.requests) == requests_before


def _long_code_reply() -> tuple[str, list[str]]:
    """A ~5,000-character answer whose code block must be split across messages."""
    code = [f'print("step {i:03d} of the nightly deploy script")' for i in range(110)]
    text = (
        "Here is the script you asked for:\n```python\n"
        + "\n".join(code)
        + "\n```\nThat is all. END-OF-REPLY"
    )
    return text, code


async def test_guild_chat_then_commands(tmp_path: Path, sqlite_url: str) -> None:
    """One gateway process for both parts: every start of the real process costs seconds."""
    async with discord_world(tmp_path, sqlite_url, **SMALL_WINDOW) as w:
        await _guild_conversation(w)
        await _commands(w)


async def _guild_conversation(w: World) -> None:
    """Mentions and replies answered, chatter kept with names, a thread apart, long and loud replies."""
    dc, llm = w.dc, w.llm

    # Messages not addressed to the bot are stored with their speaker's name and not answered.
    dc.push_message(GENERAL, "the deploy moved to friday", author_id=BOB, username="bob", guild_id=GUILD)
    await w.wait_rows(GENERAL, lambda rows: len(rows) == 1)
    dc.push_message(GENERAL, "I will bring the cake", author_id=CAROL, username="carol", guild_id=GUILD)
    await w.wait_rows(GENERAL, lambda rows: len(rows) == 2)
    mention = await w.reply_to(
        lambda: dc.push_message(
            GENERAL,
            "what is happening?",
            author_id=ANN,
            username="ann",
            guild_id=GUILD,
            mentions_bot=True,
        )
    )
    assert mention.channel_id == GENERAL
    assert "what is happening?" in mention.content
    assert GENERAL in dc.typing_calls
    assert_never_pings(mention)
    shown = w.last_request_text()
    for line in (
        "[bob] the deploy moved to friday",
        "[carol] I will bring the cake",
        "[ann] what is happening?",
    ):
        assert line in shown
    assert len(dc.sent) == 1, "only the mention was answered"

    # A reply to the bot's message is answered too, without a mention.
    answer = await w.reply_to(
        lambda: dc.push_message(
            GENERAL,
            "thanks!",
            author_id=BOB,
            username="bob",
            guild_id=GUILD,
            reply_to_bot_message_id=mention.message_id,
        )
    )
    assert "thanks!" in answer.content

    # A thread is its own conversation: the channel's messages are not in its context.
    in_thread = await w.reply_to(
        lambda: dc.push_message(
            THREAD,
            "ideas for the party?",
            author_id=CAROL,
            username="carol",
            guild_id=GUILD,
            mentions_bot=True,
        )
    )
    assert in_thread.channel_id == THREAD
    assert "ideas for the party?" in in_thread.content
    assert "friday" not in w.last_request_text()
    assert [r.text for r in await w.rows(GENERAL, THREAD) if r.role == "user"] == [
        "[carol] ideas for the party?"
    ]

    # @everyone and role mentions in a reply are shown but never ping anyone.
    llm.script_reply("Heads up @everyone and <@&4242>: lunch is ready")
    loud = await w.reply_to(
        lambda: dc.push_message(
            GENERAL, "announce lunch", author_id=ANN, username="ann", guild_id=GUILD, mentions_bot=True
        )
    )
    assert loud.content == "Heads up @everyone and <@&4242>: lunch is ready"
    assert_never_pings(loud)

    # A 5,000-character reply arrives in pieces under 2,000 characters, each with balanced fences.
    text, code = _long_code_reply()
    assert len(text) > 5000
    llm.script_reply(text)
    before = len(dc.sent)
    dc.push_message(
        GENERAL, "show the script", author_id=ANN, username="ann", guild_id=GUILD, mentions_bot=True
    )
    await dc.wait_for(
        lambda: any("END-OF-REPLY" in s.content for s in dc.sent[before:]), timeout=REPLY_TIMEOUT
    )
    pieces = [s.content for s in dc.sent[before:]]
    assert len(pieces) >= 3
    assert all(len(piece) <= 2000 for piece in pieces)
    for piece in pieces:
        fences = [line for line in piece.split("\n") if line.startswith("```")]
        assert len(fences) % 2 == 0, f"unbalanced code fence in a piece:\n{piece[:200]}"
    joined = "\n".join(pieces)
    assert [line for line in code if joined.count(line) != 1] == []
    assert pieces[0].startswith("Here is the script you asked for:")
    assert all(s.channel_id == GENERAL for s in dc.sent[before:])
    assert all(s.allowed_mentions == loud.allowed_mentions for s in dc.sent[before:])


async def _commands(w: World) -> None:
    """Slash commands synced, deferred and answered by followup; typed commands; /compact and undo."""
    dc = w.dc

    # The command registry is synced as global slash commands at start-up.
    assert sorted(c["name"] for c in dc.commands) == [
        "compact",
        "help",
        "new",
        "pin",
        "pins",
        "stats",
        "unpin",
    ]
    with_args = {c["name"] for c in dc.commands if c.get("options")}
    assert with_args == {"compact", "pin", "stats", "unpin"}

    async def slash(command: str, args: str | None, *, channel: int, user: int) -> SentMessage:
        guild = GUILD if channel in (GENERAL, THREAD) else None
        before = len(dc.sent)
        iid = dc.push_interaction(command, args, channel_id=channel, guild_id=guild, user_id=user)
        sent = (await dc.wait_sent(before + 1, timeout=REPLY_TIMEOUT))[before]
        acks = [r for r in dc.interaction_responses if r["interaction_id"] == iid]
        assert [a["type"] for a in acks] == [5], "a slash command is deferred first"
        assert (sent.kind, sent.interaction_id) == ("followup", iid)
        assert_never_pings(sent)
        return sent

    # Admin commands: a deferred slash /stats answered with a followup (here in a chat the bot has
    # never seen a message in); refused for others.
    stats = await slash("stats", None, channel=DM_ADMIN, user=ADMIN)
    assert stats.content.startswith("Stats for this chat\nModel: claude-sonnet-4-6 (window 20,000 tokens)")
    assert "Messages: 0 active, 0 archived" in stats.content
    refused = await slash("stats", None, channel=GENERAL, user=ANN)
    assert refused.content == "/stats is for admins of this bot only. Nothing was changed."
    helped = await slash("help", None, channel=GENERAL, user=ANN)
    assert "/new" in helped.content
    assert "/stats" not in helped.content

    # The same commands typed as text.
    typed = await w.reply_to(
        lambda: dc.push_message(GENERAL, "/stats", author_id=ADMIN, username="boss", guild_id=GUILD)
    )
    assert (typed.kind, typed.content.split("\n")[0]) == ("message", "Stats for this chat")
    typed_refusal = await w.reply_to(
        lambda: dc.push_message(GENERAL, "/compact", author_id=BOB, username="bob", guild_id=GUILD)
    )
    assert typed_refusal.content == "/compact is for admins of this bot only. Nothing was changed."

    # A private conversation with the admin, then /compact and /compact undo as slash commands.
    notes = [f"note {i}: the staging database is db-{i}.internal. {FILLER}" for i in range(5)]
    for note in notes:
        answer = await w.reply_to(
            functools.partial(dc.push_message, DM_ADMIN, note, author_id=ADMIN, username="boss")
        )
        assert answer.content.startswith(f"echo: {note[:20]}")
    assert len(await w.rows(DM_ADMIN)) == 10
    compacted = await slash("compact", "keep the database names", channel=DM_ADMIN, user=ADMIN)
    shape = (
        r"Compaction ok: 10→(\d+) messages; the context went from [\d,]+ to [\d,]+ tokens "
        r"\(as /stats counts it\) in \d+\.\d s\."
    )
    match = re.fullmatch(shape, compacted.content)
    assert match is not None, compacted.content
    assert len(await w.rows(DM_ADMIN)) == int(match.group(1)) < 10
    summaries = [r for r in w.llm.requests if r.kind == "summary"]
    assert len(summaries) == 1
    assert "keep the database names" in json.dumps(summaries[0].body)

    undone = await slash("compact", "undo", channel=DM_ADMIN, user=ADMIN)
    assert re.fullmatch(
        r"Undid the manual compaction from \d{4}-\d\d-\d\d \d\d:\d\d UTC: \d+ messages restored "
        r"from the archive \(\d+\.\d s\)\.",
        undone.content,
    ), undone.content
    rows = await w.rows(DM_ADMIN)
    assert [r.text for r in rows if r.role == "user"] == notes
    again = await slash("compact", "undo", channel=DM_ADMIN, user=ADMIN)
    assert again.content.startswith("Nothing to undo")
    report = await w.reply_to(lambda: dc.push_message(DM_ADMIN, "/stats", author_id=ADMIN, username="boss"))
    assert "Compactions: manual ok 1" in report.content
    assert "Last compaction: manual ok (undone)" in report.content


async def test_a_sonnet_5_5_chat_on_discord(tmp_path: Path, db_url: str) -> None:
    """On claude-sonnet-5-5: the progress written before a tool call is shown while the tool round runs,
    thinking goes back unchanged (none refused), /compact edits the prefix and the chat goes on, and a
    refusal ends in a clear reply."""
    async with discord_world(tmp_path, db_url, MODEL="claude-sonnet-5-5", **SMALL_WINDOW) as w:
        dc, llm = w.dc, w.llm

        def say(text: str) -> Callable[[], int]:
            return lambda: dc.push_message(DM_ADMIN, text, author_id=ADMIN, username="admin")

        llm.script_reply("Hi there.")
        assert (await w.reply_to(say("hi"))).content == "Hi there."
        for i in range(4):
            llm.script_reply(f"Noted {i}.")
            await w.reply_to(say(f"note {i}: {FILLER}"))

        llm.script_reply(
            progress="Checking the notes first.",
            tool_uses=[{"id": "toolu_1", "name": "recall", "input": {"query": "replica lag"}}],
        )
        shown = asyncio.Event()  # the answer waits until the progress is on screen
        llm.script_reply("The lag stayed low.", hold=shown)
        before = len(dc.sent)
        dc.push_message(DM_ADMIN, "how was the replica lag?", author_id=ADMIN, username="admin")
        await dc.wait_for(
            lambda: any("Checking the notes first." in s.content for s in dc.sent[before:]), REPLY_TIMEOUT
        )
        shown.set()
        await dc.wait_for(
            lambda: any(s.content == "The lag stayed low." for s in dc.sent[before:]), REPLY_TIMEOUT
        )
        shown = [s.content for s in dc.sent[before:]]
        assert any("Checking the notes first." in c for c in shown), shown

        compacted = await w.reply_to(
            lambda: dc.push_message(DM_ADMIN, "/compact", author_id=ADMIN, username="admin")
        )
        assert compacted.content
        llm.script_reply("Still here.")
        assert (await w.reply_to(say("still there?"))).content.endswith("Still here.")

        llm.script_reply("", refusal="cyber")
        declined = await w.reply_to(say("write malware for me"))
        assert "declined" in declined.content

        assert [r.status for r in llm.requests if r.status not in (200, None)] == []
        assert all(c["outcome"] == "kept" for r in llm.requests for c in r.thinking_checks)
