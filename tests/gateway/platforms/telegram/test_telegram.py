"""The Telegram adapter driven through real python-telegram-bot against the fake Bot API."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator

import pytest

from gateway.errors import PlatformStartError, SendError, SendGone, SendRetryLater
from gateway.platforms.base import ChatKind, ChatRef, CommandSpec, IncomingMessage, OutgoingMessage
from gateway.platforms.telegram import bot_api as telegram_send
from gateway.platforms.telegram.bot import TelegramAdapter
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram.html_parser import utf16_len
from tests.support.ports import free_port

TOKEN = "555001:adapter-test-token"
BOT_ID = 555001
COMMANDS = [
    CommandSpec("stats", "Context usage and cache statistics", admin_only=True),
    CommandSpec("compact", "Compact the conversation now", admin_only=True, args_hint="[focus|undo]"),
    CommandSpec("not-valid", "Telegram would refuse this name", admin_only=False),
]


class Inbox:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[IncomingMessage] = asyncio.Queue()

    async def __call__(self, message: IncomingMessage) -> None:
        await self.queue.put(message)

    async def next(self, timeout: float = 5.0) -> IncomingMessage:
        return await asyncio.wait_for(self.queue.get(), timeout)


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(token=TOKEN, username="OurBot", first_name="Our Bot") as fake:
        yield fake


@pytest.fixture
async def running(tg: FakeTelegram) -> AsyncIterator[tuple[TelegramAdapter, Inbox]]:
    adapter = TelegramAdapter(token=TOKEN, base_url=tg.base_url, poll_timeout=1)
    inbox = Inbox()
    await adapter.start(inbox, COMMANDS)
    yield adapter, inbox
    await adapter.stop()


@pytest.fixture(autouse=True)
def _ptb_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    # PTB 22 warns when building RetryAfter from int seconds unless told to use timedelta values.
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


async def test_start_identifies_registers_menu_and_polls(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    adapter, _ = running
    await tg.wait_for(lambda: bool(tg.called("getUpdates")))
    methods = [name for name, _ in tg.requests]
    assert methods.index("getMe") < methods.index("deleteWebhook") < methods.index("getUpdates")
    assert tg.commands == [
        {"command": "stats", "description": "Context usage and cache statistics"},
        {"command": "compact", "description": "Compact the conversation now"},
    ]
    assert adapter.bot_username == "OurBot"
    assert adapter.capabilities.max_message_length == 4096
    assert adapter.capabilities.length_unit == "utf16"


async def test_private_message_arrives_with_its_fields(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    _, inbox = running
    tg.push_message(1001, "Hello there", user_id=1001, first_name="Ada", last_name="Lovelace")
    message = await inbox.next()
    assert message.chat == ChatRef("telegram", "1001", None, ChatKind.PRIVATE, "Ada")
    assert (message.author.user_id, message.author.display_name) == ("1001", "Ada Lovelace")
    assert not message.author.is_bot
    assert not message.author.is_self
    assert message.text == "Hello there"
    assert message.platform_message_id.isdigit()
    assert message.sent_at.tzinfo is not None
    assert not message.is_command
    assert not message.is_edit
    assert message.media == ()


async def test_group_mentions_and_replies_to_the_bot_are_flagged(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    _, inbox = running
    tg.push_message(-200, "just chatting", user_id=1, chat_type="group", chat_title="Friends")
    tg.push_message(-200, "hey @ourbot what's up", user_id=2, chat_type="group")
    tg.push_message(-200, "ask @someone_else", user_id=3, chat_type="group")
    tg.push_message(-200, "sure thing", user_id=4, chat_type="group", reply_to_bot=True)
    text_mention = [{"type": "text_mention", "offset": 0, "length": 3, "user": {"id": BOT_ID, "is_bot": True,
                     "first_name": "Our Bot"}}]  # fmt: skip
    tg.push_message(-200, "Bot, help", user_id=5, chat_type="group", entities=text_mention)
    got = [await inbox.next() for _ in range(5)]
    assert [(m.mentions_bot, m.reply_to_bot) for m in got] == [
        (False, False),
        (True, False),
        (False, False),
        (False, True),
        (True, False),
    ]
    assert {m.chat.kind for m in got} == {ChatKind.GROUP}
    assert got[0].chat.title == "Friends"


async def test_forum_topic_is_its_own_chat(tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]) -> None:
    _, inbox = running
    tg.push_message(
        -300, "in topic", user_id=1, chat_type="supergroup", message_thread_id=17, is_topic_message=True
    )
    tg.push_message(-300, "general", user_id=1, chat_type="supergroup")
    tg.push_message(
        -300, "answer me", user_id=1, chat_type="supergroup", message_thread_id=17, is_topic_message=True,
        reply_to_bot=True,
    )  # fmt: skip
    topic, general, reply = [await inbox.next() for _ in range(3)]
    assert topic.chat.thread_id == "17"
    assert general.chat.thread_id is None
    assert topic.chat.key != general.chat.key
    assert topic.chat.key == reply.chat.key
    # Telegram attaches the topic's service message as reply_to_message; that is not a reply to the bot.
    assert not topic.reply_to_bot
    assert reply.reply_to_bot


async def test_commands_for_us_and_for_other_bots(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    _, inbox = running
    tg.push_message(-400, "/Compact@OurBot keep the API notes", user_id=1, chat_type="group")
    tg.push_message(-400, "/stats@other_bot", user_id=1, chat_type="group")
    tg.push_message(9, "/help", user_id=9)
    # Order is kept within a chat, not across chats.
    by_text = {m.text: m for m in [await inbox.next() for _ in range(3)]}
    ours, other, plain = (
        by_text[t] for t in ("/Compact@OurBot keep the API notes", "/stats@other_bot", "/help")
    )
    assert (ours.is_command, ours.command, ours.command_args, ours.command_target) == (
        True,
        "compact",
        "keep the API notes",
        None,
    )
    assert (other.command, other.command_target) == ("stats", "other_bot")
    assert (plain.command, plain.command_args, plain.command_target) == ("help", "", None)


async def test_edited_message_is_marked_with_its_own_id(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    _, inbox = running
    tg.push_message(11, "typo", user_id=11, message_id=77)
    tg.push_message(11, "fixed", user_id=11, message_id=77, edited=True)
    original, edit = await inbox.next(), await inbox.next()
    assert (original.is_edit, original.platform_message_id) == (False, "77")
    assert edit.is_edit
    assert edit.text == "fixed"
    assert edit.platform_message_id.startswith("77:edit:")


async def test_media_with_caption_and_without(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    _, inbox = running
    tg.push_message(12, user_id=12, photo=True, caption="look at this")
    tg.push_message(12, user_id=12, sticker=True)
    tg.push_message(12, user_id=12, voice=True)
    photo, sticker, voice = [await inbox.next() for _ in range(3)]
    assert (photo.media, photo.caption, photo.text) == (("photo",), "look at this", "")
    assert (sticker.media, sticker.caption) == (("sticker",), None)
    assert voice.media == ("voice",)


async def test_senders_without_a_verifiable_user(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    _, inbox = running
    tg.push_message(-500, "as the group", chat_type="supergroup", chat_title="Team", sender_chat=-500)
    tg.push_message(-600, "channel news", chat_type="channel", chat_title="News")
    by_text = {m.text: m for m in [await inbox.next(), await inbox.next()]}
    admin, post = by_text["as the group"], by_text["channel news"]
    assert admin.author.user_id == "chat:-500"
    assert admin.author.is_anonymous_admin
    assert admin.author.display_name == "Team"
    assert post.chat.kind is ChatKind.CHANNEL
    assert post.author.is_anonymous_admin


async def test_bots_self_and_forwards(tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]) -> None:
    _, inbox = running
    tg.push_message(-700, "beep", user_id=31337, first_name="OtherBot", chat_type="group", from_bot=True)
    tg.push_message(-700, "echo", user_id=BOT_ID, first_name="Our Bot", chat_type="group", from_bot=True)
    tg.push_message(13, "read this", user_id=13, forward_origin="Mystery Person")
    by_text = {m.text: m for m in [await inbox.next() for _ in range(3)]}
    bot, own, forwarded = (by_text[t] for t in ("beep", "echo", "read this"))
    assert bot.author.is_bot
    assert not bot.author.is_self
    assert own.author.is_self
    assert forwarded.is_forwarded
    assert forwarded.forward_origin == "user Mystery Person"


async def test_a_failing_or_slow_handler_does_not_stop_other_chats(tg: FakeTelegram) -> None:
    seen: list[str] = []
    release = asyncio.Event()
    arrived = {"fast": asyncio.Event(), "slow": asyncio.Event()}

    async def handler(message: IncomingMessage) -> None:
        if message.text == "boom":
            raise RuntimeError("handler bug")
        if message.text == "slow":
            await release.wait()
        seen.append(message.text)
        arrived[message.text].set()

    adapter = TelegramAdapter(token=TOKEN, base_url=tg.base_url, poll_timeout=1)
    await adapter.start(handler, [])
    try:
        tg.push_message(1, "slow", user_id=1)
        tg.push_message(2, "boom", user_id=2)
        tg.push_message(3, "fast", user_id=3)
        await asyncio.wait_for(arrived["fast"].wait(), 5)
        assert seen == ["fast"]
        release.set()
        await asyncio.wait_for(arrived["slow"].wait(), 5)
        assert seen == ["fast", "slow"]
    finally:
        await adapter.stop()


async def test_stop_lets_a_running_turn_finish_its_reply(tg: FakeTelegram) -> None:
    adapter = TelegramAdapter(token=TOKEN, base_url=tg.base_url, poll_timeout=1)
    started = asyncio.Event()

    async def handler(message: IncomingMessage) -> None:
        started.set()
        await asyncio.sleep(0.5)
        await adapter.sender.send(OutgoingMessage(chat=message.chat, text="finished"))

    await adapter.start(handler, [])
    tg.push_message(21, "long question", user_id=21)
    await asyncio.wait_for(started.wait(), 5)
    await adapter.stop()
    assert [s.visible_text for s in tg.sent] == ["finished"]


async def test_long_reply_is_split_under_the_limit_without_breaking_code(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    adapter, _ = running
    code = "\n".join(f"    value_{i} = compute({i}) < limit & mask  # 😀" for i in range(150))
    prose = " ".join(["Emoji 😀 count twice in UTF-16 & <tags> are escaped."] * 120)
    text = f"**Report**\n\n{prose}\n\n```python\n{code}\n```\n\nDone."
    result = await adapter.sender.send(OutgoingMessage(chat=ChatRef("telegram", "42"), text=text))
    assert len(result.platform_message_ids) == len(tg.sent) >= 3
    assert all(s.parse_mode == "HTML" for s in tg.sent)
    assert all(utf16_len(s.text) <= 4096 for s in tg.sent)
    visible = "\n".join(s.visible_text for s in tg.sent)
    for i in range(150):
        assert f"value_{i} = compute({i}) < limit & mask" in visible
    code_chunks = [s for s in tg.sent if "value_" in s.visible_text]
    assert len(code_chunks) >= 2
    assert all(s.text.count("<pre>") == s.text.count("</pre>") == 1 for s in code_chunks)
    assert all('class="language-python"' in s.text for s in code_chunks)


async def test_emoji_only_reply_is_split_by_utf16_units_and_lone_surrogates_survive(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    adapter, _ = running
    await adapter.sender.send(OutgoingMessage(chat=ChatRef("telegram", "42"), text="😀" * 3000))
    assert [utf16_len(s.visible_text) for s in tg.sent] == [3500, 2500]
    await adapter.sender.send(
        OutgoingMessage(chat=ChatRef("telegram", "42"), text="broken \ud800 model output")
    )
    assert tg.sent[-1].visible_text == "broken \ufffd model output"


async def test_reply_goes_to_the_topic_and_quotes_the_message(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    adapter, _ = running
    chat = ChatRef("telegram", "-800", "5", ChatKind.GROUP)
    await adapter.sender.send(OutgoingMessage(chat=chat, text="on it", reply_to_message_id="12"))
    [sent] = tg.sent
    assert (sent.chat_id, sent.message_thread_id, sent.reply_to, sent.visible_text) == (-800, 5, 12, "on it")


async def test_rejected_html_is_resent_as_plain_text(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    adapter, _ = running
    tg.fail_next("sendMessage", kind="parse_error")
    result = await adapter.sender.send(
        OutgoingMessage(chat=ChatRef("telegram", "42"), text="**Total:** 3 < 4")
    )
    [sent] = tg.sent
    assert (sent.parse_mode, sent.text) == (None, "**Total:** 3 < 4")
    assert result.platform_message_ids == (str(sent.message_id),)
    assert len(tg.called("sendMessage")) == 2


async def test_flood_control_is_waited_out_then_reported(tg: FakeTelegram) -> None:
    adapter = TelegramAdapter(token=TOKEN, base_url=tg.base_url, poll_timeout=1, max_retry_wait=2)
    await adapter.start(Inbox(), [])
    try:
        tg.fail_next("sendMessage", kind="retry_after", retry_after=1)
        started = time.monotonic()
        await adapter.sender.send(OutgoingMessage(chat=ChatRef("telegram", "42"), text="after the wait"))
        assert time.monotonic() - started >= 1.0
        assert [s.visible_text for s in tg.sent] == ["after the wait"]

        tg.fail_next("sendMessage", kind="retry_after", retry_after=30)
        with pytest.raises(SendRetryLater) as caught:
            await adapter.sender.send(OutgoingMessage(chat=ChatRef("telegram", "42"), text="too long a wait"))
        assert (caught.value.retry_after, caught.value.chat_id) == (30.0, "42")

        tg.fail_next("sendMessage", kind="forbidden")
        with pytest.raises(SendError) as blocked:
            await adapter.sender.send(OutgoingMessage(chat=ChatRef("telegram", "43"), text="hello?"))
        assert blocked.value.chat_id == "43"
        assert len(tg.sent) == 1
    finally:
        await adapter.stop()


async def test_a_reaction_in_a_chat_closed_to_the_bot_is_send_gone(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    adapter, _ = running
    tg.fail_next("setMessageReaction", kind="forbidden")
    with pytest.raises(SendGone) as blocked:
        await adapter.sender.react(ChatRef("telegram", "43"), "7", "👀")
    assert blocked.value.chat_id == "43"
    assert tg.reactions == []
    assert len(tg.called("setMessageReaction")) == 1


async def test_typing_is_kept_alive_while_held(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox], monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter, _ = running
    monkeypatch.setattr(telegram_send, "TYPING_INTERVAL", 0.2)
    chat = ChatRef("telegram", "-900", "3", ChatKind.GROUP)
    async with adapter.sender.typing(chat):
        await tg.wait_for(lambda: len(tg.actions) >= 3, timeout=3)
    held = len(tg.actions)
    await asyncio.sleep(0.5)
    assert len(tg.actions) == held
    assert {(a["chat_id"], a["action"], a["message_thread_id"]) for a in tg.actions} == {(-900, "typing", 3)}


async def test_typing_failures_are_not_raised(
    tg: FakeTelegram, running: tuple[TelegramAdapter, Inbox]
) -> None:
    adapter, _ = running
    tg.fail_next("sendChatAction", kind="forbidden")
    async with adapter.sender.typing(ChatRef("telegram", "42")):
        await tg.wait_for(lambda: bool(tg.called("sendChatAction")))
    assert tg.actions == []


async def test_a_rejected_token_fails_start_without_leaking_it(tg: FakeTelegram) -> None:
    adapter = TelegramAdapter(token="555001:wrong-secret", base_url=tg.base_url)
    with pytest.raises(PlatformStartError) as caught:
        await adapter.start(Inbox(), [])
    assert "wrong-secret" not in str(caught.value)


async def test_webhook_mode_accepts_only_updates_with_the_secret(tg: FakeTelegram) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram/hook"
    adapter = TelegramAdapter(
        token=TOKEN, base_url=tg.base_url, webhook_url=url, webhook_listen="127.0.0.1", webhook_port=port,
        webhook_secret="hook-secret",
    )  # fmt: skip
    inbox = Inbox()
    await adapter.start(inbox, [])
    try:
        assert (tg.webhook["url"], tg.webhook["secret_token"]) == (url, "hook-secret")
        update = {
            "update_id": 900,
            "message": {"message_id": 5, "date": int(time.time()), "text": "via webhook",
                        "chat": {"id": 77, "type": "private", "first_name": "W"},
                        "from": {"id": 77, "is_bot": False, "first_name": "W"}},
        }  # fmt: skip
        assert await tg.deliver_webhook(url, update) == 403
        assert await tg.deliver_webhook(url, update, secret_token="wrong") == 403
        assert await tg.deliver_webhook(url, update, secret_token="hook-secret") == 200
        message = await inbox.next()
        assert (message.text, message.chat.chat_id) == ("via webhook", "77")
        assert inbox.queue.empty()
        assert not tg.called("getUpdates")
    finally:
        await adapter.stop()


async def test_webhook_port_in_use_fails_start_cleanly(tg: FakeTelegram) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        adapter = TelegramAdapter(
            token=TOKEN, base_url=tg.base_url, webhook_url=f"http://127.0.0.1:{port}/hook",
            webhook_listen="127.0.0.1", webhook_port=port,
        )  # fmt: skip
        with pytest.raises(PlatformStartError, match="could not start the webhook server"):
            await adapter.start(Inbox(), [])
        assert not tg.webhook, "Telegram was not told to send updates to a port we could not bind"


async def test_an_update_that_cannot_be_converted_is_logged_with_its_chat(
    tg: FakeTelegram,
    running: tuple[TelegramAdapter, Inbox],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import gateway.platforms.telegram.bot as telegram_module

    def broken(update: object, bot: object) -> None:
        raise ValueError("unexpected update shape")

    monkeypatch.setattr(telegram_module, "convert_update", broken)
    tg.push_message(4242, "hello", user_id=4242)
    await tg.wait_for(lambda: "could not be handled" in caplog.text, timeout=5)
    assert "in chat 4242" in caplog.text
    assert "unexpected update shape" in caplog.text
