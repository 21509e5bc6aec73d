"""The fake Bot API answers like Telegram: status codes, descriptions, long polling, HTML validation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from telegram import Bot
from telegram.error import BadRequest, InvalidToken, RetryAfter

from tests.fakes.telegram import FakeTelegram

TOKEN = "4242:fake-secret"


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(token=TOKEN, username="OurBot") as fake:
        yield fake


async def call(
    tg: FakeTelegram, method: str, token: str = TOKEN, **params: Any
) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"http://127.0.0.1:{tg.port}/bot{token}/{method}", json=params) as resp,
    ):
        return resp.status, await resp.json()


async def test_wrong_token_is_401_and_unknown_method_is_404(tg: FakeTelegram) -> None:
    assert await call(tg, "getMe", token="4242:wrong") == (
        401,
        {"ok": False, "error_code": 401, "description": "Unauthorized"},
    )
    assert await call(tg, "sendRocket") == (404, {"ok": False, "error_code": 404, "description": "Not Found"})


async def test_ptb_bot_sees_identity_and_invalid_token(tg: FakeTelegram) -> None:
    async with Bot(TOKEN, base_url=tg.base_url, base_file_url=tg.base_file_url) as bot:
        assert (bot.id, bot.username) == (4242, "OurBot")
    with pytest.raises(InvalidToken):
        async with Bot("4242:wrong", base_url=tg.base_url):
            pass


async def test_long_poll_waits_for_an_update_and_offsets_acknowledge(tg: FakeTelegram) -> None:
    started = time.monotonic()
    status, body = await call(tg, "getUpdates", timeout=1)
    assert (status, body["result"]) == (200, [])
    assert time.monotonic() - started >= 0.9

    poll = asyncio.create_task(call(tg, "getUpdates", timeout=5))
    await asyncio.sleep(0.2)
    assert not poll.done()
    tg.push_message(7, "hi", user_id=7)
    _, body = await asyncio.wait_for(poll, 2)
    [update] = body["result"]
    assert update["message"]["text"] == "hi"

    # Not acknowledged yet: delivered again; acknowledged with offset: gone.
    _, again = await call(tg, "getUpdates", offset=update["update_id"])
    assert [u["update_id"] for u in again["result"]] == [update["update_id"]]
    _, after = await call(tg, "getUpdates", offset=update["update_id"] + 1)
    assert after["result"] == []


async def test_unconfirmed_updates_come_back_until_a_higher_offset(tg: FakeTelegram) -> None:
    answered: list[list[int]] = []
    tg.on_updates_sent = answered.append
    first = tg.push_message(7, "one", user_id=7)["update_id"]
    second = tg.push_message(8, "two", user_id=8)["update_id"]
    for _ in range(2):  # no offset: nothing is confirmed, both come back every time
        _, body = await call(tg, "getUpdates")
        assert [u["update_id"] for u in body["result"]] == [first, second]
    _, body = await call(tg, "getUpdates", offset=second)  # confirms `first` only
    assert [u["update_id"] for u in body["result"]] == [second]
    _, body = await call(tg, "getUpdates")
    assert [u["update_id"] for u in body["result"]] == [second]
    _, body = await call(tg, "getUpdates", offset=second + 1, timeout=0)
    assert body["result"] == []
    # The hook and the record see every answer that carried updates, after it was sent.
    assert answered == [[first, second], [first, second], [second], [second]]
    assert [ids for _, ids in tg.update_answers] == answered


async def test_send_message_validates_length_in_utf16_units(tg: FakeTelegram) -> None:
    ok, _ = await call(tg, "sendMessage", chat_id=1, text="😀" * 2048)
    too_long, body = await call(tg, "sendMessage", chat_id=1, text="😀" * 2048 + "x")
    empty, empty_body = await call(tg, "sendMessage", chat_id=1, text="  ")
    assert ok == 200
    assert (too_long, body["description"]) == (400, "Bad Request: message is too long")
    assert (empty, empty_body["description"]) == (400, "Bad Request: message text is empty")
    assert len(tg.sent) == 1


@pytest.mark.parametrize(
    "html",
    ["<b>open", "1 < 2", "fish & chips", "<b><i>x</b></i>", "<marquee>x</marquee>", "<pre><b>x</b></pre>",
     '<span class="red">x</span>', "</b>"],
)  # fmt: skip
async def test_html_that_telegram_rejects_is_a_400(tg: FakeTelegram, html: str) -> None:
    status, body = await call(tg, "sendMessage", chat_id=1, text=html, parse_mode="HTML")
    assert status == 400
    assert body["description"].startswith("Bad Request: can't parse entities: ")
    assert tg.sent == []


async def test_valid_html_is_accepted_and_counted_after_parsing(tg: FakeTelegram) -> None:
    html = (
        "<b>b</b><strong>s</strong><i>i</i><u>u</u><s>s</s><tg-spoiler>x</tg-spoiler>"
        '<span class="tg-spoiler">y</span><a href="https://e.com/?a=1&amp;b=2">l</a><code>1 &lt; 2</code>'
        '<pre><code class="language-py">x &gt; 1</code></pre>'
        "<blockquote expandable>q</blockquote>&#128512;&quot;"
    )
    status, body = await call(tg, "sendMessage", chat_id=5, text=html, parse_mode="HTML")
    assert status == 200, body
    assert body["result"]["text"] == 'bsiusxyl1 < 2x > 1q😀"'
    # 4096 visible units pass even though the markup makes the request longer.
    status, _ = await call(tg, "sendMessage", chat_id=5, text="<b>" + "a" * 4096 + "</b>", parse_mode="HTML")
    assert status == 200


async def test_faults_follow_telegram_shapes_and_reach_ptb_as_typed_errors(
    tg: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PTB 22 warns when RetryAfter is built with int seconds unless it is told to use timedelta.
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    tg.fail_next("sendMessage", kind="retry_after", retry_after=3)
    status, body = await call(tg, "sendMessage", chat_id=1, text="x")
    assert (status, body["parameters"]) == (429, {"retry_after": 3})
    tg.fail_next("sendMessage", kind="parse_error")
    async with Bot(TOKEN, base_url=tg.base_url) as bot:
        await bot.send_message(chat_id=1, text="plain is not affected")
        with pytest.raises(BadRequest):
            await bot.send_message(chat_id=1, text="<b>fine</b>", parse_mode="HTML")
        tg.fail_next("sendMessage", kind="retry_after", retry_after=1)
        with pytest.raises(RetryAfter):
            await bot.send_message(chat_id=1, text="x")
    assert [s.text for s in tg.sent] == ["plain is not affected"]


async def test_commands_are_stored_per_scope(tg: FakeTelegram) -> None:
    commands = [{"command": "stats", "description": "Usage"}]
    assert (await call(tg, "setMyCommands", commands=commands))[0] == 200
    assert (await call(tg, "setMyCommands", commands=[{"command": "Bad-Name", "description": "x"}]))[0] == 400
    assert tg.commands == commands
    assert (await call(tg, "getMyCommands"))[1]["result"] == commands
    await call(tg, "deleteMyCommands")
    assert tg.commands == []


async def test_webhook_blocks_polling_until_deleted(tg: FakeTelegram) -> None:
    await call(tg, "setWebhook", url="https://bot.example/hook", secret_token="s3")
    status, _body = await call(tg, "getUpdates")
    assert status == 409
    assert (await call(tg, "getWebhookInfo"))[1]["result"]["url"] == "https://bot.example/hook"
    await call(tg, "deleteWebhook")
    assert (await call(tg, "getUpdates"))[0] == 200


async def test_edit_message_text_needs_an_existing_changed_message(tg: FakeTelegram) -> None:
    _, body = await call(tg, "sendMessage", chat_id=3, text="draft")
    message_id = body["result"]["message_id"]
    assert (await call(tg, "editMessageText", chat_id=3, message_id=message_id, text="final"))[0] == 200
    status, body = await call(tg, "editMessageText", chat_id=3, message_id=message_id, text="final")
    assert (status, body["description"].split(":")[0]) == (400, "Bad Request")
    assert (await call(tg, "editMessageText", chat_id=3, message_id=99999, text="x"))[0] == 400
    assert [s.edited for s in tg.sent] == [False, True]


def test_pushed_messages_carry_entities_like_telegram() -> None:
    fake = FakeTelegram(token=TOKEN, username="OurBot")
    fake.push_update = lambda update: update  # type: ignore[method-assign]
    update = fake.push_message(-5, "/stats@OurBot now 😀 @OurBot", user_id=9, chat_type="group")
    entities = update["message"]["entities"]
    assert entities[0] == {"type": "bot_command", "offset": 0, "length": 13}
    # The emoji counts two UTF-16 units, so the mention starts at 21 although it is character 20.
    assert entities[1] == {"type": "mention", "offset": 21, "length": 7}
    topic = fake.push_message(
        -5, "x", user_id=9, chat_type="supergroup", message_thread_id=4, is_topic_message=True
    )
    assert topic["message"]["reply_to_message"]["forum_topic_created"]["name"] == "Topic 4"
    assert topic["update_id"] == update["update_id"] + 1


async def test_reactions_take_telegrams_emoji_on_known_messages(tg: FakeTelegram) -> None:
    tg.push_message(42, "hello", user_id=42)
    async with Bot(TOKEN, base_url=tg.base_url, base_file_url=tg.base_file_url) as bot:
        assert await bot.set_message_reaction(chat_id=42, message_id=1, reaction="👀") is True
        with pytest.raises(BadRequest, match=r"(?i)reaction_invalid"):
            await bot.set_message_reaction(chat_id=42, message_id=1, reaction="🦖")
        with pytest.raises(BadRequest, match=r"(?i)message_id_invalid"):
            await bot.set_message_reaction(chat_id=42, message_id=999, reaction="👀")
    assert [(r["chat_id"], r["message_id"], r["reaction"]) for r in tg.reactions] == [
        (42, 1, [{"type": "emoji", "emoji": "👀"}])
    ]


async def test_a_reply_embeds_the_replied_message_and_its_quote(tg: FakeTelegram) -> None:
    tg.push_message(42, "the deploy is at noon", user_id=42)
    update = tg.push_message(42, "which noon?", user_id=42, reply_to_message_id=1, quote="noon")
    message = update["message"]
    assert message["reply_to_message"]["text"] == "the deploy is at noon"
    assert "reply_to_message" not in message["reply_to_message"]
    assert message["quote"] == {"text": "noon", "position": 17, "is_manual": True}
    with pytest.raises(ValueError):
        tg.push_message(42, "x", user_id=42, reply_to_message_id=1, quote="midnight")
