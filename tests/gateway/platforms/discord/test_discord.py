"""The Discord adapter driven through real discord.py against the protocol-level fake Discord."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import pytest

from gateway.errors import PlatformStartError, SendError, SendRejected, SendRetryLater
from gateway.intake.rendering import render_incoming
from gateway.platforms.base import ChatKind, ChatRef, CommandSpec, IncomingMessage, OutgoingMessage
from gateway.platforms.discord.connection import DiscordAdapter
from tests.fakes.discord import FakeDiscord
from tests.fakes.discord.payloads import attachment

GUILD, GENERAL, RANDOM, THREAD, DM = 900, 901, 902, 903, 904
ANN, BOB = 501, 502
COMMANDS = [
    CommandSpec("stats", "Show context usage for this chat", admin_only=True, args_hint="[all]"),
    CommandSpec("compact", "Compact the session now", admin_only=True, args_hint="[focus | undo]"),
    CommandSpec("help", "What this bot can do", admin_only=False),
]


class Inbox:
    """Collects what the adapter delivers, with a wait for a matching message."""

    def __init__(self) -> None:
        self.items: list[IncomingMessage] = []
        self._cond = asyncio.Condition()

    async def handler(self, message: IncomingMessage) -> None:
        async with self._cond:
            self.items.append(message)
            self._cond.notify_all()

    async def wait_for(
        self,
        predicate: Callable[[IncomingMessage], bool],
        *,
        count: int = 1,
        timeout: float = 5.0,
    ) -> list[IncomingMessage]:
        def matching() -> list[IncomingMessage]:
            return [m for m in self.items if predicate(m)]

        async with self._cond:
            await asyncio.wait_for(self._cond.wait_for(lambda: len(matching()) >= count), timeout)
            return matching()

    async def message(self, platform_message_id: int) -> IncomingMessage:
        found = await self.wait_for(lambda m: m.platform_message_id == str(platform_message_id))
        return found[0]


@pytest.fixture
async def dc() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        fake.add_guild(GUILD, "Test Guild", channels=[(GENERAL, "general"), (RANDOM, "random")])
        fake.add_thread(GUILD, GENERAL, THREAD, "design-notes")
        yield fake


@pytest.fixture
async def bot(dc: FakeDiscord) -> AsyncIterator[tuple[DiscordAdapter, Inbox]]:
    inbox = Inbox()
    adapter = DiscordAdapter(dc.token, dc.api_base, dc.gateway_url, guild_ready_timeout=0.05)
    await adapter.start(inbox.handler, COMMANDS)
    yield adapter, inbox
    await adapter.stop()


GUILDS_INTENT, DIRECT_MESSAGES_INTENT, MESSAGE_CONTENT_INTENT = 1 << 0, 1 << 12, 1 << 15


def library_urls() -> tuple[str, str]:
    """discord.py's REST root and websocket URL (module-level settings the adapter must restore)."""
    # Imported here: the adapter module imported discord.py first, with its audioop warning filtered.
    import discord

    return discord.http.Route.BASE, str(discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)


def general() -> ChatRef:
    return ChatRef("discord", str(GENERAL), kind=ChatKind.GROUP, title="#general")


async def test_start_reaches_ready_and_syncs_the_command_specs(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    intents = dc.identifies[0]["intents"]
    for bit in (GUILDS_INTENT, DIRECT_MESSAGES_INTENT, MESSAGE_CONTENT_INTENT):
        assert intents & bit == bit
    await dc.wait_for(lambda: bool(dc.commands))  # synced in the background after READY
    synced = {c["name"]: c for c in dc.commands}
    assert set(synced) == {"stats", "compact", "help"}
    assert synced["compact"]["description"] == "Compact the session now"
    assert [(o["name"], o["type"], o.get("required")) for o in synced["compact"]["options"]] == [
        ("args", 3, False)
    ]
    assert synced["help"]["options"] == []
    assert dc.unexpected == []


async def test_bad_token_fails_start_and_restores_library_urls(dc: FakeDiscord) -> None:
    before = library_urls()
    adapter = DiscordAdapter("wrong-token", dc.api_base, dc.gateway_url, guild_ready_timeout=0.05)
    with pytest.raises(PlatformStartError):
        await adapter.start(Inbox().handler, COMMANDS)
    assert library_urls() == before


async def test_library_urls_point_at_the_fake_while_running_and_are_restored(dc: FakeDiscord) -> None:
    before = library_urls()
    adapter = DiscordAdapter(dc.token, dc.api_base, dc.gateway_url, guild_ready_timeout=0.05)
    await adapter.start(Inbox().handler, [])
    assert library_urls() == (dc.api_base, dc.gateway_url)
    await adapter.stop()
    assert library_urls() == before


async def test_an_http_gateway_url_from_settings_is_used_as_a_websocket_url(dc: FakeDiscord) -> None:
    http_url = dc.gateway_url.replace("ws://", "http://")
    adapter = DiscordAdapter(dc.token, dc.api_base, http_url, guild_ready_timeout=0.05)
    await adapter.start(Inbox().handler, [])
    try:
        assert library_urls()[1] == dc.gateway_url
        assert len(dc.identifies) == 1
    finally:
        await adapter.stop()


async def test_direct_message_is_a_private_chat(dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]) -> None:
    _, inbox = bot
    mid = dc.push_message(DM, "hello there", author_id=ANN, username="ann")
    msg = await inbox.message(mid)
    assert msg.chat == ChatRef("discord", str(DM), None, ChatKind.PRIVATE, None)
    assert (msg.author.user_id, msg.author.display_name, msg.author.is_bot) == (str(ANN), "ann", False)
    assert msg.text == "hello there"
    assert not msg.is_command
    assert not msg.mentions_bot


async def test_guild_mention_is_flagged_and_stripped_plain_message_is_not(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    _, inbox = bot
    mentioned = await inbox.message(
        dc.push_message(
            GENERAL, "what is new?", author_id=ANN, username="ann", guild_id=GUILD, mentions_bot=True
        )
    )
    plain = await inbox.message(
        dc.push_message(GENERAL, "lunch at noon", author_id=BOB, username="bob", guild_id=GUILD)
    )
    assert mentioned.chat == general()
    assert mentioned.mentions_bot
    assert mentioned.text == "what is new?"
    assert plain.chat == general()
    assert not plain.mentions_bot
    assert plain.text == "lunch at noon"
    assert plain.author.display_name == "bob"


async def test_thread_is_its_own_chat_and_replies_go_into_the_thread(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, inbox = bot
    msg = await inbox.message(
        dc.push_message(THREAD, "in the thread", author_id=ANN, username="ann", guild_id=GUILD)
    )
    assert (msg.chat.chat_id, msg.chat.thread_id, msg.chat.kind) == (
        str(GENERAL),
        str(THREAD),
        ChatKind.GROUP,
    )
    assert msg.chat.key != general().key
    await adapter.sender.send(OutgoingMessage(msg.chat, "answer in thread"))
    sent = await dc.wait_sent(1)
    assert (sent[0].channel_id, sent[0].content) == (THREAD, "answer in thread")


async def test_typed_command_is_parsed_and_slash_paths_are_not(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    _, inbox = bot
    cmd = await inbox.message(
        dc.push_message(GENERAL, "/Stats all", author_id=ANN, username="ann", guild_id=GUILD)
    )
    path = await inbox.message(
        dc.push_message(GENERAL, "/usr/bin is full", author_id=ANN, username="ann", guild_id=GUILD)
    )
    via_mention = await inbox.message(
        dc.push_message(
            GENERAL,
            "/compact keep the API notes",
            author_id=ANN,
            username="ann",
            guild_id=GUILD,
            mentions_bot=True,
        )
    )
    assert (cmd.is_command, cmd.command, cmd.command_args, cmd.reply_handle) == (True, "stats", "all", None)
    assert not path.is_command
    assert path.command is None
    assert (via_mention.command, via_mention.command_args) == ("compact", "keep the API notes")


async def test_slash_command_is_deferred_then_answered_by_followup(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, inbox = bot
    iid = dc.push_interaction(
        "compact", "keep decisions", channel_id=GENERAL, guild_id=GUILD, user_id=ANN, username="ann"
    )
    msg = await inbox.message(iid)
    assert [r["type"] for r in dc.interaction_responses] == [5]  # deferred before the gateway saw it
    assert msg.reply_handle is not None  # the deferred interaction, answered by a followup
    assert msg.is_command
    assert (msg.command, msg.command_args, msg.chat) == ("compact", "keep decisions", general())
    assert msg.author.user_id == str(ANN)
    result = await adapter.sender.send(
        OutgoingMessage(msg.chat, "Compacted: 40 -> 12 messages", reply_handle=msg.reply_handle)
    )
    sent = await dc.wait_sent(1)
    assert (sent[0].kind, sent[0].interaction_id, sent[0].content) == (
        "followup",
        iid,
        "Compacted: 40 -> 12 messages",
    )
    assert result.platform_message_ids == (str(sent[0].message_id),)


async def test_slash_command_in_a_dm_without_args(dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]) -> None:
    _, inbox = bot
    msg = await inbox.message(dc.push_interaction("help", None, channel_id=DM, user_id=BOB, username="bob"))
    assert (msg.command, msg.command_args, msg.chat.kind, msg.chat.chat_id) == (
        "help",
        "",
        ChatKind.PRIVATE,
        str(DM),
    )


async def test_long_reply_is_split_under_2000_without_breaking_code_blocks(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, _ = bot
    code = "\n".join(f"    result_{i} = compute({i})  # step {i}" for i in range(120))
    text = "Here is the plan.\n\n" + "word " * 300 + "\n\n```python\n" + code + "\n```\n\nDone."
    assert len(text) > 5000
    result = await adapter.sender.send(OutgoingMessage(general(), text))
    sent = await dc.wait_sent(len(result.platform_message_ids))
    assert len(sent) >= 3
    assert all(len(s.content) <= 2000 for s in sent)
    assert all(s.content.count("```") % 2 == 0 for s in sent)
    rejoined = "\n".join(s.content for s in sent)
    assert all(f"result_{i} = compute({i})" in rejoined for i in range(120))
    assert rejoined.rstrip().endswith("Done.")


async def test_everyone_here_and_role_mentions_never_ping(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, inbox = bot
    asker = await inbox.message(
        dc.push_message(GENERAL, "ping all", author_id=ANN, username="ann", guild_id=GUILD)
    )
    await adapter.sender.send(
        OutgoingMessage(
            general(), "@everyone @here <@&777> and <@501>", reply_to_message_id=asker.platform_message_id
        )
    )
    iid = dc.push_interaction("stats", None, channel_id=GENERAL, guild_id=GUILD, user_id=ANN)
    msg = await inbox.message(iid)
    await adapter.sender.send(OutgoingMessage(msg.chat, "@everyone stats", reply_handle=msg.reply_handle))
    sent = await dc.wait_sent(2)
    for s in sent:
        assert s.allowed_mentions is not None
        parse = s.allowed_mentions.get("parse", [])
        assert "everyone" not in parse
        assert "roles" not in parse
        assert s.allowed_mentions.get("roles", []) == []
        assert not s.allowed_mentions.get("replied_user", False)
    assert sent[0].message_reference is not None
    assert sent[0].message_reference["message_id"] == asker.platform_message_id


async def test_rate_limit_is_retried_by_the_library_then_delivered(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, _ = bot
    dc.fail_next(f"POST /channels/{GENERAL}/messages", status=429, retry_after=0.2)
    started = asyncio.get_running_loop().time()
    result = await adapter.sender.send(OutgoingMessage(general(), "after the flood"))
    assert asyncio.get_running_loop().time() - started >= 0.2
    assert [f.status for f in dc.faults_served] == [429]
    assert [s.content for s in dc.sent] == ["after the flood"]
    assert result.platform_message_ids == (str(dc.sent[0].message_id),)


async def test_persistent_rate_limit_raises_retry_later(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, _ = bot
    dc.fail_next("POST /channels/{id}/messages", status=429, retry_after=0.05, times=5)
    with pytest.raises(SendRetryLater) as caught:
        await adapter.sender.send(OutgoingMessage(general(), "never lands"))
    assert caught.value.chat_id == str(GENERAL)
    assert caught.value.retry_after > 0
    assert dc.sent == []


async def test_invalid_form_body_is_resent_in_smaller_pieces(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, _ = bot
    text = "\n".join(f"line {i} " + "x" * 60 for i in range(25))
    assert 1000 < len(text) <= 2000
    dc.fail_next("POST /channels/{id}/messages", status=400, code=50035)
    result = await adapter.sender.send(OutgoingMessage(general(), text))
    assert len(result.platform_message_ids) == 2
    assert all(len(s.content) <= 1000 for s in dc.sent)
    assert "\n".join(s.content for s in dc.sent) == text


async def test_content_rejected_again_raises_send_rejected_with_chat_id(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, _ = bot
    dc.fail_next("POST /channels/{id}/messages", status=400, code=50035, times=10)
    with pytest.raises(SendRejected) as caught:
        await adapter.sender.send(OutgoingMessage(general(), "rejected twice"))
    assert caught.value.chat_id == str(GENERAL)


async def test_forbidden_channel_raises_send_error(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, _ = bot
    dc.fail_next(f"POST /channels/{RANDOM}/messages", status=403)
    with pytest.raises(SendError) as caught:
        await adapter.sender.send(OutgoingMessage(ChatRef("discord", str(RANDOM), kind=ChatKind.GROUP), "hi"))
    assert not isinstance(caught.value, SendRetryLater | SendRejected)
    assert caught.value.chat_id == str(RANDOM)


async def test_typing_indicator_is_sent_and_its_failure_only_logged(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox], caplog: pytest.LogCaptureFixture
) -> None:
    adapter, _ = bot
    async with adapter.sender.typing(general()):
        assert dc.typing_calls == [GENERAL]
    dc.fail_next(f"POST /channels/{RANDOM}/typing", status=403)
    with caplog.at_level(logging.WARNING, logger="gateway.platforms.discord.rest"):
        async with adapter.sender.typing(ChatRef("discord", str(RANDOM), kind=ChatKind.GROUP)):
            pass
    assert any(str(RANDOM) in r.getMessage() for r in caplog.records)


async def test_own_messages_arrive_marked_and_replies_to_the_bot_are_detected(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, inbox = bot
    result = await adapter.sender.send(OutgoingMessage(general(), "I am the bot"))
    bot_mid = int(result.platform_message_ids[0])
    own = await inbox.message(bot_mid)
    assert own.author.is_self
    assert own.author.is_bot
    reply = await inbox.message(
        dc.push_message(
            GENERAL, "thanks", author_id=ANN, username="ann", guild_id=GUILD, reply_to_bot_message_id=bot_mid
        )
    )
    other = await inbox.message(
        dc.push_message(GENERAL, "no reply", author_id=ANN, username="ann", guild_id=GUILD)
    )
    other_bot = await inbox.message(
        dc.push_message(GENERAL, "beep", author_id=BOB, username="otherbot", guild_id=GUILD, author_bot=True)
    )
    assert reply.reply_to_bot
    assert not reply.author.is_self
    assert not other.reply_to_bot
    assert other_bot.author.is_bot
    assert not other_bot.author.is_self


async def test_attachments_become_media_kinds_and_edits_are_flagged(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    _, inbox = bot
    files = [
        attachment("cat.png", "image/png"),
        attachment("note.ogg", "audio/ogg"),
        attachment("report.pdf", "application/pdf"),
    ]
    mid = dc.push_message(DM, "look", author_id=ANN, username="ann", attachments=files)
    msg = await inbox.message(mid)
    assert msg.media == ("photo", "audio", "document")
    # The text reaches the model once: as the message's text, not again as a caption per attachment
    # (each attachment is stood for by the label the media intake gives it).
    assert [a.kind for a in msg.attachments] == ["photo", "audio", "document"]
    assert render_incoming(
        msg, ["[photo m1]", "[sent an audio file]", "[PDF m2: report.pdf, 1 page]"]
    ).text == ("[photo m1]\n[sent an audio file]\n[PDF m2: report.pdf, 1 page]\nlook")
    dc.push_edit(mid, "look again")
    edited = await inbox.wait_for(lambda m: m.is_edit and m.platform_message_id == str(mid))
    assert edited[0].text == "look again"


async def test_a_voice_message_is_a_voice_note_with_its_length_and_a_download(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    _, inbox = bot
    sound = b"OggS" + bytes(300)
    mid = dc.push_message(
        DM, "", author_id=ANN, username="ann", attachments=[dc.voice_attachment(sound, seconds=4.5)]
    )
    msg = await inbox.message(mid)
    assert dc.messages[mid]["flags"] == 8192
    assert msg.media == ("voice",)
    [voice] = msg.attachments
    assert (voice.kind, voice.duration_s, voice.mime_type) == ("voice", 4.5, "audio/ogg")
    assert voice.fetch is not None
    assert await voice.fetch() == sound


async def test_resume_after_forced_disconnect_replays_missed_messages(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    _, inbox = bot
    first = await inbox.message(dc.push_message(DM, "before", author_id=ANN, username="ann"))
    await dc.disconnect(code=4000)
    missed = dc.push_message(DM, "while away", author_id=ANN, username="ann")
    msg = await inbox.message(missed)
    assert msg.text == "while away"
    assert len(dc.identifies) == 1
    assert len(dc.resumes) == 1
    assert dc.replayed, "the missed dispatch was replayed after RESUME"
    # At-least-once delivery: a replay of already-delivered dispatches reaches the handler again.
    await dc.disconnect(code=4000, replay_last=1)
    await inbox.wait_for(lambda m: m.platform_message_id == str(missed), count=2)
    assert [m.platform_message_id for m in inbox.items].count(first.platform_message_id) == 1


async def test_slash_command_in_a_thread_belongs_to_the_thread_chat(
    dc: FakeDiscord, bot: tuple[DiscordAdapter, Inbox]
) -> None:
    adapter, inbox = bot
    iid = dc.push_interaction("stats", "all", channel_id=THREAD, guild_id=GUILD, user_id=ANN)
    msg = await inbox.message(iid)
    assert (msg.chat.chat_id, msg.chat.thread_id) == (str(GENERAL), str(THREAD))
    await adapter.sender.send(OutgoingMessage(msg.chat, "thread stats", reply_handle=msg.reply_handle))
    sent = await dc.wait_sent(1)
    assert (sent[0].kind, sent[0].channel_id) == ("followup", THREAD)


async def test_a_failing_handler_is_logged_and_later_messages_still_arrive(
    dc: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = Inbox()

    async def flaky(message: IncomingMessage) -> None:
        if message.text == "boom":
            raise RuntimeError("handler bug")
        await inbox.handler(message)

    adapter = DiscordAdapter(dc.token, dc.api_base, dc.gateway_url, guild_ready_timeout=0.05, store_retry_s=0)
    await adapter.start(flaky, [])
    try:
        with caplog.at_level(logging.ERROR, logger="gateway.platforms.discord.connection"):
            dc.push_message(DM, "boom", author_id=ANN, username="ann")
            after = await inbox.message(dc.push_message(DM, "still here", author_id=ANN, username="ann"))
        assert after.text == "still here"
        assert any(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in caplog.records)
    finally:
        await adapter.stop()
