"""Telegram files through real python-telegram-bot against the fake Bot API: photos, documents,
stickers, voice notes and albums become attachments whose bytes download through getFile and the
file URL; albums arrive as one message."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gateway.errors import MediaFetchError
from gateway.platforms.base import IncomingMessage
from gateway.platforms.telegram.bot import TelegramAdapter
from tests.fakes.telegram import FakeTelegram
from tests.support.media_files import image_bytes, pdf_bytes

TOKEN = "555002:media-test-token"


class Inbox:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[IncomingMessage] = asyncio.Queue()

    async def __call__(self, message: IncomingMessage) -> None:
        await self.queue.put(message)

    async def next(self, timeout: float = 5.0) -> IncomingMessage:
        return await asyncio.wait_for(self.queue.get(), timeout)


@pytest.fixture(autouse=True)
def _ptb_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(token=TOKEN, username="OurBot") as fake:
        yield fake


@pytest.fixture
async def inbox(tg: FakeTelegram) -> AsyncIterator[Inbox]:
    # Only base_url is given: the file URL is derived from it the way the Bot API lays them out.
    adapter = TelegramAdapter(token=TOKEN, base_url=tg.base_url, poll_timeout=1)
    box = Inbox()
    await adapter.start(box, [])
    yield box
    await adapter.stop()


async def test_photo_downloads_its_largest_size_with_the_caption(tg: FakeTelegram, inbox: Inbox) -> None:
    original = image_bytes(1280, 960)
    tg.push_photo(7, original, caption="what is this error?", user_id=7)
    message = await inbox.next()
    assert (message.media, message.caption) == (("photo",), "what is this error?")
    [photo] = message.attachments
    assert (photo.kind, photo.width, photo.height, photo.size) == ("photo", 1280, 960, len(original))
    assert photo.fetch is not None
    assert await photo.fetch() == original
    largest = max(tg.files.values(), key=lambda f: len(f.data))
    assert tg.called("getFile")[-1]["file_id"] == largest.file_id
    assert tg.downloads == [largest.file_path]


async def test_documents_keep_their_name_type_and_size(tg: FakeTelegram, inbox: Inbox) -> None:
    pdf = pdf_bytes(["hello"])
    tg.push_document(
        7, pdf, file_name="contract.pdf", mime_type="application/pdf", caption="summarize", user_id=7
    )
    tg.push_document(7, b"a,b\n1,2\n", file_name="data.csv", mime_type="text/csv", user_id=7)
    first, second = await inbox.next(), await inbox.next()
    [doc] = first.attachments
    assert (doc.kind, doc.filename, doc.mime_type, doc.size) == (
        "document",
        "contract.pdf",
        "application/pdf",
        len(pdf),
    )
    assert doc.fetch is not None
    assert await doc.fetch() == pdf
    assert first.caption == "summarize"
    [csv] = second.attachments
    assert csv.fetch is not None
    assert await csv.fetch() == b"a,b\n1,2\n"


async def test_stickers_are_images_and_voice_notes_come_with_their_length_and_a_download(
    tg: FakeTelegram, inbox: Inbox
) -> None:
    tg.push_sticker(7, image_bytes(512, 512, "WEBP"), emoji="🔥", user_id=7)
    tg.push_sticker(7, image_bytes(128, 128, "WEBP", seed=2), emoji="😂", animated=True, user_id=7)
    tg.push_voice(7, user_id=7, caption="listen")
    still, animated, voice = [await inbox.next() for _ in range(3)]
    assert (still.attachments[0].kind, still.attachments[0].label) == ("sticker", "🔥")
    assert still.attachments[0].fetch is not None
    assert animated.attachments[0].fetch is not None  # its still thumbnail
    assert (await animated.attachments[0].fetch())[:4] == b"RIFF"
    [note] = voice.attachments
    assert (note.kind, note.duration_s, note.mime_type, voice.caption) == (
        "voice",
        3.0,
        "audio/ogg",
        "listen",
    )
    # Described, not downloaded: the gateway fetches it only when transcription is on.
    assert not any(path.startswith("voice/") for path in tg.downloads)
    assert note.fetch is not None
    assert (await note.fetch())[:4] == b"OggS"


async def test_an_album_arrives_as_one_message_with_every_photo(tg: FakeTelegram, inbox: Inbox) -> None:
    images = [image_bytes(640, 480, seed=i) for i in range(3)]
    tg.push_album(7, images, caption="which one is best?", user_id=7)
    tg.push_message(7, "and a text right after", user_id=7)
    album = await inbox.next()
    assert album.caption == "which one is best?"
    assert len(album.attachments) == 3
    assert [await a.fetch() for a in album.attachments if a.fetch] == images
    follow_up = await inbox.next()  # kept behind the album, in the chat's order
    assert follow_up.text == "and a text right after"
    assert int(album.platform_message_id) < int(follow_up.platform_message_id)


async def test_a_file_telegram_will_not_hand_over_becomes_a_fetch_error(
    tg: FakeTelegram, inbox: Inbox
) -> None:
    big = tg.add_file(bytes(21 * 1024 * 1024), name="huge.bin")
    update = tg.push_document(7, b"x", file_name="huge.log", mime_type="text/plain", user_id=7)
    update["message"]["document"]["file_id"] = big.file_id  # the API refuses files above 20 MB
    message = await inbox.next()
    [doc] = message.attachments
    assert doc.fetch is not None
    with pytest.raises(MediaFetchError) as caught:
        await doc.fetch()
    assert "20 MB" in caught.value.reason
