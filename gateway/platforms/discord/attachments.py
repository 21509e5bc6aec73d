"""Discord attachments as gateway `Attachment`s, downloaded through discord.py (`Attachment.read()`).

Images, PDFs and text files are read by the gateway; voice messages (attachments with a duration and
a waveform, `is_voice_message()`) and audio files come with their length and a download, which the
gateway uses only when it transcribes them; video is described but never downloaded. Sticker images
(PNG, APNG, GIF) are read like images; Lottie stickers are named by their name. discord.py errors
become `MediaFetchError` with a reason for the sender.
"""

from __future__ import annotations

import aiohttp
import discord

from gateway.errors import MediaFetchError
from gateway.platforms.base import Attachment, Fetch, MediaKind


def _reader(item: discord.Attachment | discord.StickerItem) -> Fetch:
    async def fetch() -> bytes:
        try:
            return await item.read()
        except discord.NotFound as exc:
            raise MediaFetchError("the file was deleted before it could be read") from exc
        except (discord.HTTPException, discord.DiscordException, aiohttp.ClientError, OSError) as exc:
            raise MediaFetchError("it could not be downloaded from Discord just now") from exc

    return fetch


def kind_of(content_type: str | None, *, voice_message: bool = False) -> MediaKind:
    mime = (content_type or "").lower()
    if voice_message:
        return "voice"
    if mime.startswith("image/"):
        return "photo"
    if mime.startswith("audio/"):
        return "audio"
    if mime.startswith("video/"):
        return "video"
    return "document"


def attachments_of(message: discord.Message) -> tuple[Attachment, ...]:
    found: list[Attachment] = []
    for item in message.attachments:
        kind = kind_of(item.content_type, voice_message=item.is_voice_message())
        readable = kind in ("photo", "document", "voice", "audio")
        found.append(
            Attachment(
                kind=kind,
                filename=item.filename,
                mime_type=item.content_type,
                size=item.size,
                width=item.width,
                height=item.height,
                duration_s=item.duration,
                fetch=_reader(item) if readable else None,
            )
        )
    for sticker in message.stickers:
        still = sticker.format in (discord.StickerFormatType.png, discord.StickerFormatType.apng)
        still = still or sticker.format is discord.StickerFormatType.gif
        found.append(
            Attachment(kind="sticker", label=sticker.name, fetch=_reader(sticker) if still else None)
        )
    return tuple(found)
