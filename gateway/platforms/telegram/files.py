"""Telegram files as gateway `Attachment`s, downloads through python-telegram-bot, and albums.

- Photos: the largest size within the download limit. Documents: as sent (the gateway decides from
  the bytes whether they are an image, a PDF or text). Static stickers are images; animated and video
  stickers use their still thumbnail when they have one, else their emoji stands for them. Voice notes,
  audio files and video notes come with their length and a download, which the gateway uses only when
  it transcribes them. Videos and animations are described but never downloaded.
- Downloads: `bot.get_file(file_id)` then `download_as_bytearray()`; the library builds the URL from
  `base_file_url`. Telegram errors become `MediaFetchError` with a reason worded for the sender.
- Albums: the photos of one `media_group_id` arrive as separate updates; `AlbumCollector` joins them
  into one message once no new item has come for a short while.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence

from telegram import Audio, Bot, Message, PhotoSize, Update, VideoNote, Voice
from telegram.error import BadRequest, TelegramError

from gateway.errors import MediaFetchError
from gateway.platforms.base import Attachment, Fetch, IncomingMessage

logger = logging.getLogger(__name__)

BOT_API_DOWNLOAD_LIMIT = 20 * 1024 * 1024
ALBUM_SETTLE_S = 0.8
"""An album is complete once no item has arrived for this long (Telegram sends them back to back)."""
ALBUM_MAX_WAIT_S = 4.0


def fetcher(bot: Bot, file_id: str) -> Fetch:
    """A download of one file through the Bot API."""

    async def fetch() -> bytes:
        try:
            file = await bot.get_file(file_id)
            return bytes(await file.download_as_bytearray())
        except BadRequest as exc:
            # Mostly "file is too big": bots may download at most 20 MB through the public Bot API.
            raise MediaFetchError(
                "Telegram would not hand it over (bots can download files of at most 20 MB)"
            ) from exc
        except TelegramError as exc:
            raise MediaFetchError("it could not be downloaded from Telegram just now") from exc

    return fetch


def seconds_of(medium: Voice | Audio | VideoNote) -> float | None:
    """The declared length in seconds, read from the wire form (the `duration` attribute warns that it
    will turn into a timedelta in a later python-telegram-bot)."""
    value = medium.to_dict().get("duration")
    return float(value) if isinstance(value, int | float) else None


def best_photo(sizes: Sequence[PhotoSize], max_bytes: int) -> PhotoSize | None:
    """The largest size Telegram offers whose file is within `max_bytes` (or of unknown size)."""
    fitting = [p for p in sizes if p.file_size is None or p.file_size <= max_bytes]
    candidates = fitting or list(sizes)
    return max(candidates, key=lambda p: (p.width * p.height, p.file_size or 0), default=None)


def attachments_of(
    message: Message, bot: Bot, *, max_bytes: int = BOT_API_DOWNLOAD_LIMIT
) -> tuple[Attachment, ...]:
    """Every file the message carries, described; readable ones come with a download."""
    found = (
        _photo(message, bot, max_bytes),
        _document(message, bot),
        _sticker(message, bot),
        _voice(message, bot),
        _audio(message, bot),
        _video_note(message, bot),
        Attachment(kind="video", filename=message.video.file_name) if message.video else None,
        Attachment(kind="animation", filename=message.animation.file_name) if message.animation else None,
    )
    return tuple(a for a in found if a is not None)


def _photo(message: Message, bot: Bot, max_bytes: int) -> Attachment | None:
    photo = best_photo(message.photo, max_bytes) if message.photo else None
    if photo is None:
        return None
    return Attachment(
        kind="photo",
        mime_type="image/jpeg",
        size=photo.file_size,
        width=photo.width,
        height=photo.height,
        fetch=fetcher(bot, photo.file_id),
    )


def _document(message: Message, bot: Bot) -> Attachment | None:
    document = message.document
    if document is None:
        return None
    return Attachment(
        kind="document",
        filename=document.file_name,
        mime_type=document.mime_type,
        size=document.file_size,
        fetch=fetcher(bot, document.file_id),
    )


def _sticker(message: Message, bot: Bot) -> Attachment | None:
    sticker = message.sticker
    if sticker is None:
        return None
    still = not sticker.is_animated and not sticker.is_video
    source = sticker if still else sticker.thumbnail
    return Attachment(
        kind="sticker",
        mime_type="image/webp" if still else "image/jpeg",
        size=source.file_size if source is not None else None,
        width=source.width if source is not None else None,
        height=source.height if source is not None else None,
        label=sticker.emoji,
        fetch=fetcher(bot, source.file_id) if source is not None else None,
    )


def _voice(message: Message, bot: Bot) -> Attachment | None:
    voice = message.voice
    if voice is None:
        return None
    return Attachment(
        kind="voice",
        mime_type=voice.mime_type or "audio/ogg",
        size=voice.file_size,
        duration_s=seconds_of(voice),
        fetch=fetcher(bot, voice.file_id),
    )


def _audio(message: Message, bot: Bot) -> Attachment | None:
    audio = message.audio
    if audio is None:
        return None
    return Attachment(
        kind="audio",
        filename=audio.file_name or audio.title,
        mime_type=audio.mime_type,
        size=audio.file_size,
        duration_s=seconds_of(audio),
        fetch=fetcher(bot, audio.file_id),
    )


def _video_note(message: Message, bot: Bot) -> Attachment | None:
    """A round video message: its sound is transcribed (the endpoint takes MP4 as it is)."""
    video_note = message.video_note
    if video_note is None:
        return None
    return Attachment(
        kind="video_note",
        filename="video_note.mp4",
        mime_type="video/mp4",
        size=video_note.file_size,
        duration_s=seconds_of(video_note),
        fetch=fetcher(bot, video_note.file_id),
    )


def with_attachments(
    incoming: IncomingMessage, update: Update, bot: Bot, *, max_bytes: int = BOT_API_DOWNLOAD_LIMIT
) -> IncomingMessage:
    """`incoming` with the files of the update's message attached."""
    message = update.effective_message
    if message is None:
        return incoming
    found = attachments_of(message, bot, max_bytes=max_bytes)
    return dataclasses.replace(incoming, attachments=found) if found else incoming


class AlbumCollector:
    """Joins the updates of one album into one message, keeping its place in the chat's order.

    `add` returns the album the update belongs to: its `future` resolves to the joined message once
    no item has arrived for `settle_s` (or `max_wait_s` after the first); the adapter queues one
    hand-over for it (`task`) when the first item arrives, so later messages of the chat wait behind it.
    """

    def __init__(self, *, settle_s: float = ALBUM_SETTLE_S, max_wait_s: float = ALBUM_MAX_WAIT_S) -> None:
        self._settle_s = settle_s
        self._max_wait_s = max_wait_s
        self._albums: dict[str, Album] = {}

    def add(self, group_key: str, incoming: IncomingMessage) -> Album:
        loop = asyncio.get_running_loop()
        album = self._albums.get(group_key)
        if album is None:
            album = self._albums[group_key] = Album(loop.create_future(), loop.time() + self._max_wait_s)
        album.items.append(incoming)
        if album.timer is not None:
            album.timer.cancel()
        delay = max(0.0, min(self._settle_s, album.deadline - loop.time()))
        album.timer = loop.call_later(delay, self._close, group_key)
        return album

    def close_all(self) -> None:
        """Resolve every open album now (at shutdown)."""
        for key in list(self._albums):
            self._close(key)

    def _close(self, group_key: str) -> None:
        album = self._albums.pop(group_key, None)
        if album is None:
            return
        if album.timer is not None:
            album.timer.cancel()
        if not album.future.done():
            album.future.set_result(merge_album(album.items))


@dataclasses.dataclass
class Album:
    future: asyncio.Future[IncomingMessage]
    deadline: float
    items: list[IncomingMessage] = dataclasses.field(default_factory=list)
    timer: asyncio.TimerHandle | None = None
    task: asyncio.Task[bool] | None = None
    """The hand-over of the joined message (set by the adapter when the first item arrives)."""


def merge_album(items: Sequence[IncomingMessage]) -> IncomingMessage:
    """One message for an album: the first item's identity, every item's files, the caption sent."""
    ordered = sorted(items, key=lambda m: _numeric_id(m.platform_message_id))
    first = ordered[0]
    captions = [m.caption for m in ordered if m.caption]
    return dataclasses.replace(
        first,
        caption="\n".join(dict.fromkeys(captions)) or None,
        mentions_bot=any(m.mentions_bot for m in ordered),
        reply_to_bot=any(m.reply_to_bot for m in ordered),
        media=tuple(kind for m in ordered for kind in m.media),
        attachments=tuple(a for m in ordered for a in m.attachments),
    )


def _numeric_id(message_id: str) -> int:
    head = message_id.split(":", 1)[0]
    return int(head) if head.isdigit() else 0
