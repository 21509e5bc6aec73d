"""Attachments through the real pipeline and store: what is stored, what the sender is told, what is
answered. (Requests that carry stored images are covered with the window, which renders them.)"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent.media import image_tokens
from gateway.errors import MediaFetchError
from gateway.intake.spool import decode, encode
from gateway.platforms.base import Attachment
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import Bot, running_bot
from tests.support.media_files import corrupt_jpeg, image_bytes, pdf_bytes
from tests.support.memory_adapter import ALICE, BOB, group_chat, private_chat
from tests.support.thinking_trail import losses

GROUP = group_chat("-100", "Team")


class Download:
    """A fetch that counts its calls."""

    def __init__(self, data: bytes | None = None, error: str | None = None) -> None:
        self.data, self.error, self.calls = data, error, 0

    async def __call__(self) -> bytes:
        self.calls += 1
        if self.error is not None:
            raise MediaFetchError(self.error)
        assert self.data is not None
        return self.data


def photo(data: bytes, **kw: Any) -> Attachment:
    return Attachment(kind="photo", mime_type="image/jpeg", size=len(data), fetch=Download(data), **kw)


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def bot(fake: FakeAnthropic, db_url: str) -> AsyncIterator[Bot]:
    async with running_bot(fake, db_url) as running:
        yield running


async def test_group_photo_not_for_the_bot_is_stored_as_context_downscaled(bot: Bot) -> None:
    big = image_bytes(4000, 3000)
    replies = await bot.adapter.say(
        "", chat=GROUP, media=("photo",), caption="our new office", attachments=(photo(big),)
    )
    assert replies == []
    assert bot.replies() == []
    [row] = await bot.window("telegram", "-100")
    ref, text = row.content  # type: ignore[misc]
    assert ref["type"] == "media_ref"
    assert (ref["kind"], ref["media_type"], ref["width"], ref["height"]) == (
        "image",
        "image/jpeg",
        1568,
        1176,
    )
    assert ref["tokens"] == image_tokens(1568, 1176)
    assert text == {"type": "text", "text": f"[Alice] [photo m{ref['media_id']}]\nour new office"}
    # counted as the API counts the image, never as base64 text
    assert ref["tokens"] < row.token_estimate < ref["tokens"] + 30
    stored = await bot.rows(
        "SELECT width, height, byte_size, tokens FROM media WHERE id = :i", i=ref["media_id"]
    )
    assert stored[0][:2] == (1568, 1176)
    assert stored[0][2] < len(big)
    assert await bot.scalar("SELECT count(*) FROM message_media WHERE message_id = :m", m=row.id) == 1


async def test_voice_note_gets_one_clear_reply_and_is_stored(bot: Bot) -> None:
    voice = Attachment(kind="voice", mime_type="audio/ogg")
    replies = await bot.adapter.say("", media=("voice",), attachments=(voice,))
    assert len(replies) == 1
    assert "I can't read voice messages yet" in replies[0].text
    assert "PDFs and text files" in replies[0].text
    assert bot.replies() == []  # nothing to answer: no turn
    [row] = await bot.window()
    assert row.text == "[sent a voice message; the bot cannot read this kind of message]"
    assert not row.needs_reply


async def test_voice_note_with_a_caption_still_gets_the_caption_answered(bot: Bot) -> None:
    voice = Attachment(kind="voice", mime_type="audio/ogg")
    replies = await bot.adapter.say("", media=("voice",), caption="call me at 5?", attachments=(voice,))
    assert "I can't read voice messages yet" in replies[0].text
    assert "I'll answer the text of your message." in replies[0].text
    assert [r.text for r in replies[1:]] == [
        "echo: [sent a voice message; the bot cannot read this kind of message] call me at 5?"
    ]


async def test_corrupt_image_is_refused_clearly_and_nothing_is_lost(bot: Bot) -> None:
    replies = await bot.adapter.say(
        "",
        media=("document",),
        attachments=(
            Attachment(
                kind="document", filename="shot.jpg", mime_type="image/jpeg", fetch=Download(corrupt_jpeg())
            ),
        ),
    )
    assert [r.text for r in replies] == [
        "I couldn't read “shot.jpg”: the file is damaged or not an image. I can read photos, images "
        "(JPEG, PNG, GIF, WebP and most others), PDFs and text files (txt, md, csv, json, code, logs)."
    ]
    [row] = await bot.window()
    assert row.text == "[sent a file shot.jpg that could not be read: the file is damaged or not an image]"
    assert await bot.scalar("SELECT count(*) FROM media") == 0


async def test_a_file_over_the_limit_is_not_downloaded(bot: Bot) -> None:
    download = Download(b"x")
    huge = Attachment(
        kind="document", filename="dump.log", mime_type="text/plain", size=25 * 1024 * 1024, fetch=download
    )
    replies = await bot.adapter.say("", attachments=(huge,), media=("document",))
    assert download.calls == 0
    assert "it is 25.0 MB and the limit is 20 MB" in replies[0].text


async def test_a_failed_download_is_told_and_the_text_answered(bot: Bot) -> None:
    failing = Attachment(
        kind="photo", fetch=Download(error="it could not be downloaded from Telegram just now")
    )
    replies = await bot.adapter.say("", caption="see?", attachments=(failing,), media=("photo",))
    assert replies[0].text.startswith(
        "I couldn't read the photo: it could not be downloaded from Telegram just now."
    )
    assert replies[1].text.startswith("echo: ")


async def test_csv_is_read_as_text_and_answered(bot: Bot) -> None:
    csv = Attachment(
        kind="document", filename="sales.csv", mime_type="text/csv", fetch=Download(b"month,total\njan,10\n")
    )
    replies = await bot.adapter.say(
        "", caption="which month sold most?", attachments=(csv,), media=("document",)
    )
    assert len(replies) == 1
    sent = json.dumps(bot.replies()[-1].body["messages"], ensure_ascii=False)
    assert (
        '<document name=\\"sales.csv\\" note=\\"text file\\">\\nmonth,total\\njan,10\\n\\n</document>' in sent
    )
    assert "which month sold most?" in sent


async def test_redelivered_photo_stores_nothing_twice(bot: Bot) -> None:
    data = image_bytes(640, 480)
    for _ in range(2):
        await bot.adapter.say("", chat=GROUP, message_id="p-1", media=("photo",), attachments=(photo(data),))
    assert len(await bot.window("telegram", "-100")) == 1
    assert await bot.scalar("SELECT count(*) FROM media") == 1
    assert await bot.scalar("SELECT count(*) FROM message_media") == 1


async def test_the_same_picture_twice_is_stored_once(bot: Bot) -> None:
    data = image_bytes(640, 480)
    await bot.adapter.say("", chat=GROUP, media=("photo",), attachments=(photo(data),))
    await bot.adapter.say("", chat=GROUP, user=ALICE, media=("photo",), attachments=(photo(data),))
    assert len(await bot.window("telegram", "-100")) == 2
    assert await bot.scalar("SELECT count(*) FROM media") == 1
    assert await bot.scalar("SELECT count(*) FROM message_media") == 2


def test_the_spool_keeps_downloaded_bytes_and_errors() -> None:
    from tests.support.memory_adapter import MemoryAdapter

    data = image_bytes(32, 32)
    msg = MemoryAdapter().incoming(
        "",
        media=("photo", "voice"),
        attachments=(
            Attachment(kind="photo", mime_type="image/jpeg", width=32, height=32, data=data),
            Attachment(kind="voice", error=None),
        ),
    )
    back = decode(encode(msg))
    assert back.attachments == msg.attachments
    assert back.attachments[0].data == data


def _blocks_of_type(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [
        block
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == kind
    ]


async def test_private_photo_with_a_question_reaches_the_model_as_an_image(
    bot: Bot, fake: FakeAnthropic
) -> None:
    data = image_bytes(1200, 900)
    replies = await bot.adapter.say(
        "", media=("photo",), caption="what is in this picture?", attachments=(photo(data),)
    )
    assert len(replies) == 1
    assert replies[0].text.startswith("echo: [photo m")
    assert replies[0].text.endswith("what is in this picture?")
    body = bot.replies()[-1].body
    [image] = _blocks_of_type(body, "image")
    assert image["source"]["media_type"] == "image/jpeg"
    assert base64.b64decode(image["source"]["data"]) == data  # small enough: stored as sent
    assert "media_ref" not in json.dumps(body)
    assert fake.requests[-1].status == 200

    await bot.adapter.say("and the colours?")
    later = bot.replies()[-1].body
    assert _blocks_of_type(later, "image") == [image]  # sent once, the same bytes as before
    first_turn = [b for b in body["messages"][0]["content"] if b.get("type") == "image"]
    assert [b for b in later["messages"][0]["content"] if b.get("type") == "image"] == first_turn


async def test_an_album_is_one_turn_with_every_image_once(bot: Bot) -> None:
    images = [image_bytes(320, 240, seed=i) for i in range(3)]
    replies = await bot.adapter.say(
        "", media=("photo",) * 3, caption="compare these", attachments=tuple(photo(d) for d in images)
    )
    assert len(replies) == 1
    assert len(bot.replies()) == 1
    assert len(_blocks_of_type(bot.replies()[-1].body, "image")) == 3


async def test_pdf_in_a_private_chat_goes_as_a_document(bot: Bot) -> None:
    pdf = Attachment(
        kind="document",
        filename="contract.pdf",
        mime_type="application/pdf",
        fetch=Download(pdf_bytes(["Term: 12 months"])),
    )
    replies = await bot.adapter.say(
        "", caption="how long is the term?", attachments=(pdf,), media=("document",)
    )
    assert len(replies) == 1
    [document] = _blocks_of_type(bot.replies()[-1].body, "document")
    assert document["title"] == "contract.pdf"
    assert document["source"]["media_type"] == "application/pdf"
    [row] = [r for r in await bot.window() if r.role == "user"]
    assert row.text.startswith("[PDF m")
    assert row.text.endswith(": contract.pdf, 1 page]\nhow long is the term?")


async def test_view_media_shows_an_earlier_image_again_only_in_its_own_chat(
    bot: Bot, fake: FakeAnthropic
) -> None:
    data = image_bytes(500, 400, seed=7)
    await bot.adapter.say("", media=("photo",), caption="remember this", attachments=(photo(data),))
    [row] = [r for r in await bot.window() if r.role == "user"]
    media_id = row.content[1]["media_id"]  # type: ignore[index]
    await bot.adapter.say("/new")  # the photo leaves the window; it stays stored
    fake.script_reply(tool_uses=[{"name": "view_media", "input": {"media_id": f"m{media_id}"}}])
    await bot.adapter.say("what was in the picture I sent?")
    request = bot.replies()[-1].body
    [result] = [
        b
        for m in request["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    image, text = result["content"]
    assert image["type"] == "image"
    assert base64.b64decode(image["source"]["data"]) == data
    assert text["text"].startswith(f"Here is image m{media_id} (500x400 px, sent ")
    # Another chat cannot see it, by id or otherwise (Bob's chat offers the tool: it has a photo too).
    bob = private_chat(BOB)
    await bot.adapter.say("", user=BOB, chat=bob, media=("photo",), attachments=(photo(image_bytes(64, 64)),))
    fake.script_reply(tool_uses=[{"name": "view_media", "input": {"media_id": f"m{media_id}"}}])
    await bot.adapter.say("show me m1", user=BOB, chat=bob)
    other = bot.replies()[-1].body
    [denied] = [
        b
        for m in other["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert denied["content"] == f"No image or PDF m{media_id} in this chat (it may have been deleted)."
    assert "remember this" not in json.dumps(other["messages"])
    assert len(_blocks_of_type(other, "image")) == 1  # Bob's own photo only


async def test_old_photos_stop_travelling_once_they_add_up_and_stay_viewable(
    bot: Bot, fake: FakeAnthropic
) -> None:
    photos = [image_bytes(1280, 960, seed=20 + i) for i in range(5)]  # 1,639 tokens each
    for i, data in enumerate(photos):
        await bot.adapter.say("", media=("photo",), caption=f"room {i}", attachments=(photo(data),))
    for i in range(4):
        await bot.adapter.say(f"question {i}")
    # Four turns later the first photos add up past the budget: demoted together, in one rewrite.
    request = bot.replies()[-1].body
    shown = [base64.b64decode(b["source"]["data"]) for b in _blocks_of_type(request, "image")]
    assert shown == photos[4:]  # only the photo within the last four turns still travels
    text = json.dumps(request["messages"])
    assert "is no longer attached; view_media shows it again" in text
    rows = [r for r in await bot.window() if r.role == "user"]
    assert [r.pruned for r in rows[:5]] == [True, True, True, True, False]
    # The next request renders the demoted rows the same way (the cached prefix stays valid).
    await bot.adapter.say("one more")
    later = bot.replies()[-1].body

    def unmarked(messages: list[dict[str, Any]]) -> str:
        return json.dumps(messages).replace(', "cache_control": {"type": "ephemeral"}', "")

    n = len(request["messages"]) - 1
    assert unmarked(later["messages"][:n]) == unmarked(request["messages"][:n])
    # And each demoted photo is still one view_media away.
    first_id = rows[0].content[1]["media_id"]  # type: ignore[index]
    fake.script_reply(tool_uses=[{"name": "view_media", "input": {"media_id": f"m{first_id}"}}])
    await bot.adapter.say("show me room 0 again")
    results = [
        b
        for m in bot.replies()[-1].body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert base64.b64decode(results[-1]["content"][0]["source"]["data"]) == photos[0]


async def test_view_media_is_offered_only_in_chats_with_media(bot: Bot) -> None:
    await bot.adapter.say("just text")
    assert {t["name"] for t in bot.replies()[-1].body["tools"]} == {
        "recall",
        "current_time",
        "schedule_message",
    }
    await bot.adapter.say(
        "", caption="now a photo", media=("photo",), attachments=(photo(image_bytes(64, 64)),)
    )
    offered = {t["name"] for t in bot.replies()[-1].body["tools"]}
    assert offered == {"recall", "current_time", "schedule_message", "view_media"}


async def test_demoting_old_photos_on_sonnet_5_5_leaves_out_the_thinking_it_invalidates(
    fake: FakeAnthropic, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Demotion rewrites the prompt from the first demoted photo on: the thinking bound to what came
    after it is left out by the gateway, the thinking before it still goes back, and the prefix check
    refuses nothing."""
    caplog.set_level(logging.INFO, logger="agent.llm")
    async with running_bot(fake, db_url, model="claude-sonnet-5-5") as bot:
        photos = [image_bytes(1280, 960, seed=40 + i) for i in range(5)]
        for i, data in enumerate(photos):
            await bot.adapter.say("", media=("photo",), caption=f"room {i}", attachments=(photo(data),))
        for i in range(4):
            await bot.adapter.say(f"question {i}")
        rows = [r for r in await bot.window() if r.role == "user"]
        assert [r.pruned for r in rows[:5]] == [True, True, True, True, False]
        await bot.adapter.say("one more")
        assert [r.status for r in fake.requests if r.kind == "reply"] == [200] * 10
        outcomes = [c["outcome"] for r in fake.requests for c in r.thinking_checks]
        assert "kept" in outcomes  # thinking went back while nothing before it changed
        assert set(outcomes) == {"kept"}  # and nothing the gateway sent was refused or dropped
        # the one request that lost thinking is the one after the demotion; none before or after it
        assert len(losses(bot.replies())) == 1
        assert any("thinking block(s) left out" in r.getMessage() for r in caplog.records)
