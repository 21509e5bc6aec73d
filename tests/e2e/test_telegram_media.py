"""Photos, images, PDFs and text files through the real gateway process, python-telegram-bot, the fake
Bot API (getFile and file downloads at `TELEGRAM_BASE_FILE_URL`) and the fake Anthropic API, which
validates image and document blocks as the real one does. One gateway per database, one chat per
scenario."""

from __future__ import annotations

import base64
import io
from typing import Any

from PIL import Image

from tests.e2e.conftest import BOT_USERNAME, TelegramWorld, WorldFactory, body_text
from tests.fakes.anthropic import RecordedRequest
from tests.support.media_files import corrupt_jpeg, image_bytes, pdf_bytes

ALICE, BOB = 42, 43
PHOTO_CHAT, GROUP, ALBUM_CHAT, DOCS_CHAT, BIG_CHAT, BAD_CHAT = 2001, -200200, 2003, 2004, 2005, 2006
GROUP_KW: dict[str, Any] = {"chat_type": "supergroup", "chat_title": "Ops"}


def images_in(record: RecordedRequest) -> list[Image.Image]:
    found = []
    for message in record.body["messages"]:
        content = message["content"]
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "image":
                    found.append(Image.open(io.BytesIO(base64.b64decode(block["source"]["data"]))))
    return found


def documents_in(record: RecordedRequest) -> list[dict[str, Any]]:
    return [
        block
        for message in record.body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "document"
    ]


async def test_media_through_telegram(telegram_world: WorldFactory) -> None:
    async with telegram_world(TELEGRAM_ALLOWED_USERS=f"{ALICE},{BOB}") as world:
        await _photo_with_a_question(world)
        await _group_image_answered_when_the_caption_mentions_the_bot(world)
        await _album_is_one_turn(world)
        await _pdf_and_csv(world)
        await _oversized_photo_is_downscaled(world)
        await _corrupt_image_and_voice_note(world)
        log = world.gw.log_text()
        assert "Traceback" not in log


async def _photo_with_a_question(world: TelegramWorld) -> None:
    world.tg.push_photo(
        PHOTO_CHAT, image_bytes(1280, 960), caption="what does this dialog say?", user_id=ALICE
    )
    (reply,) = await world.wait_replies(PHOTO_CHAT, 1)
    assert "what does this dialog say?" in reply.visible_text
    request = world.replies()[-1]
    [image] = images_in(request)
    assert image.size == (1280, 960)  # the largest size Telegram offered
    assert "what does this dialog say?" in body_text(request)
    assert any(path.startswith("photos/") for path in world.tg.downloads)


async def _group_image_answered_when_the_caption_mentions_the_bot(world: TelegramWorld) -> None:
    world.tg.push_photo(
        GROUP,
        image_bytes(640, 480, seed=1),
        caption="the new rack",
        user_id=BOB,
        first_name="Bob",
        **GROUP_KW,
    )
    calls = len(world.replies())
    world.tg.push_photo(
        GROUP,
        image_bytes(640, 480, seed=2),
        caption=f"@{BOT_USERNAME} is this cabling ok?",
        user_id=ALICE,
        first_name="Alice",
        **GROUP_KW,
    )
    (reply,) = await world.wait_replies(GROUP, 1)
    assert "is this cabling ok?" in reply.visible_text
    assert len(world.replies()) == calls + 1  # the first photo was context, not a turn of its own
    request = world.replies()[-1]
    assert len(images_in(request)) == 2  # the earlier picture is context the model can see
    assert "[Bob] [photo m" in body_text(request)


async def _album_is_one_turn(world: TelegramWorld) -> None:
    calls = len(world.replies())
    world.tg.push_album(
        ALBUM_CHAT,
        [image_bytes(400, 300, seed=10 + i) for i in range(3)],
        caption="which is sharpest?",
        user_id=ALICE,
    )
    (reply,) = await world.wait_replies(ALBUM_CHAT, 1)
    assert "which is sharpest?" in reply.visible_text
    assert len(world.replies()) == calls + 1
    assert len(images_in(world.replies()[-1])) == 3


async def _pdf_and_csv(world: TelegramWorld) -> None:
    world.tg.push_document(
        DOCS_CHAT, pdf_bytes(["Lease term: 24 months", "Rent: 900 EUR"]), file_name="lease.pdf",
        mime_type="application/pdf", caption="how long is the lease?", user_id=ALICE,
    )  # fmt: skip
    (first,) = await world.wait_replies(DOCS_CHAT, 1)
    assert "how long is the lease?" in first.visible_text
    [document] = documents_in(world.replies()[-1])
    assert (document["title"], document["source"]["media_type"]) == ("lease.pdf", "application/pdf")
    world.tg.push_document(
        DOCS_CHAT, b"region,sales\nnorth,10\nsouth,12\n", file_name="sales.csv", mime_type="text/csv",
        caption="which region sold more?", user_id=ALICE,
    )  # fmt: skip
    await world.wait_replies(DOCS_CHAT, 2)
    request = world.replies()[-1]
    assert "region,sales\\nnorth,10\\nsouth,12" in body_text(request)
    assert len(documents_in(request)) == 1  # the PDF, once; the CSV is text


async def _oversized_photo_is_downscaled(world: TelegramWorld) -> None:
    big = image_bytes(4000, 3000)
    world.tg.push_document(
        BIG_CHAT, big, file_name="IMG_0001.jpg", mime_type="image/jpeg", caption="whose desk?", user_id=ALICE
    )
    await world.wait_replies(BIG_CHAT, 1)
    [image] = images_in(world.replies()[-1])
    assert image.size == (1568, 1176)


async def _corrupt_image_and_voice_note(world: TelegramWorld) -> None:
    calls = len(world.replies())
    world.tg.push_document(
        BAD_CHAT, corrupt_jpeg(), file_name="broken.jpg", mime_type="image/jpeg", user_id=ALICE
    )
    (refusal,) = await world.wait_replies(BAD_CHAT, 1)
    assert "I couldn't read “broken.jpg”: the file is damaged or not an image." in refusal.visible_text
    world.tg.push_voice(BAD_CHAT, user_id=ALICE)
    _, voice = await world.wait_replies(BAD_CHAT, 2)
    assert "I can't read voice messages yet" in voice.visible_text
    assert len(world.replies()) == calls  # nothing for the model to answer
    # Nothing was lost: both are in the history the next turn shows the model.
    world.tg.push_message(BAD_CHAT, "did you get my files?", user_id=ALICE)
    await world.wait_replies(BAD_CHAT, 3)
    request = body_text(world.replies()[-1])
    assert "[sent a file broken.jpg that could not be read: the file is damaged or not an image]" in request
    assert "[sent a voice message; the bot cannot read this kind of message]" in request
