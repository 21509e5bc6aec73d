"""Discord attachments through real discord.py: images, PDFs and text files download with
`Attachment.read()` from the fake's CDN on 127.0.0.1; audio and video are described, never fetched."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gateway.errors import MediaFetchError
from gateway.platforms.base import IncomingMessage
from gateway.platforms.discord.connection import DiscordAdapter
from tests.fakes.discord import FakeDiscord
from tests.support.media_files import image_bytes, pdf_bytes

DM, ANN = 904, 501


@pytest.fixture
async def dc() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake


@pytest.fixture
async def inbox(dc: FakeDiscord) -> AsyncIterator[asyncio.Queue[IncomingMessage]]:
    queue: asyncio.Queue[IncomingMessage] = asyncio.Queue()
    adapter = DiscordAdapter(dc.token, dc.api_base, dc.gateway_url, guild_ready_timeout=0.05)
    await adapter.start(queue.put, [])
    yield queue
    await adapter.stop()


async def test_image_pdf_and_text_attachments_download_through_the_library(
    dc: FakeDiscord, inbox: asyncio.Queue[IncomingMessage]
) -> None:
    png, pdf = image_bytes(300, 200, "PNG"), pdf_bytes(["terms"])
    files = [
        dc.attachment("screen.png", "image/png", png, width=300, height=200),
        dc.attachment("terms.pdf", "application/pdf", pdf),
        dc.attachment("app.log", "text/plain; charset=utf-8", b"ERROR boom\n"),
        dc.attachment("memo.ogg", "audio/ogg", b"OggS\x00"),
    ]
    dc.push_message(DM, "what went wrong?", author_id=ANN, username="ann", attachments=files)
    message = await asyncio.wait_for(inbox.get(), 5)
    kinds = [(a.kind, a.filename, a.size) for a in message.attachments]
    assert kinds == [
        ("photo", "screen.png", len(png)),
        ("document", "terms.pdf", len(pdf)),
        ("document", "app.log", 11),
        ("audio", "memo.ogg", 5),
    ]
    image, document, log, audio = message.attachments
    assert (image.width, image.height) == (300, 200)
    assert image.fetch is not None
    assert await image.fetch() == png
    assert document.fetch is not None
    assert await document.fetch() == pdf
    assert log.fetch is not None
    assert await log.fetch() == b"ERROR boom\n"
    # An audio file comes with a download, which the gateway uses only when transcription is on.
    assert audio.fetch is not None
    assert audio.duration_s is None  # not a voice message: Discord sends no duration for it
    assert sorted(dc.downloads) == ["app.log", "screen.png", "terms.pdf"]
    assert await audio.fetch() == b"OggS\x00"


async def test_a_deleted_attachment_becomes_a_fetch_error(
    dc: FakeDiscord, inbox: asyncio.Queue[IncomingMessage]
) -> None:
    payload = dc.attachment("gone.png", "image/png", image_bytes(10, 10, "PNG"))
    del dc.files[payload["id"]]
    dc.push_message(DM, "", author_id=ANN, username="ann", attachments=[payload])
    message = await asyncio.wait_for(inbox.get(), 5)
    fetch = message.attachments[0].fetch
    assert fetch is not None
    with pytest.raises(MediaFetchError) as caught:
        await fetch()
    assert "deleted" in caught.value.reason
