"""From a message's attachments to stored media and session content, for the pipeline.

Voice notes, audio files and video notes are fetched and stored only when the intake keeps audio
(transcription is on); their words are added by the pipeline's voice step, from `Intake.audio`.

Two steps, because the first needs no database: `fetch_attachments` downloads what can be read (only
for authorized senders, never past the size limit, errors kept on the attachment), so a message
spooled during a database outage already holds its bytes; `MediaIntake.take` prepares them (Pillow,
pypdf, text decoding, in a worker thread), stores images and PDFs for the chat and returns the
content blocks, the labels for the message text and the problems to tell the sender about.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass, field

from agent.media import media_ref
from agent.types import Block
from gateway.errors import MediaFetchError
from gateway.media import notes
from gateway.media.kinds import Route, declared_route
from gateway.media.notes import AUDIO_KINDS, Problem
from gateway.media.prepare import (
    MB,
    MediaLimits,
    PreparedImage,
    PreparedPdf,
    PreparedText,
    Refused,
    prepare,
)
from gateway.media.presence import MediaPresence
from gateway.platforms.base import Attachment, IncomingMessage
from gateway.store.messages.media import MediaInfo, MediaStore, NewMedia

logger = logging.getLogger(__name__)

READABLE_KINDS = frozenset({"photo", "sticker", "document"})
"""Kinds whose bytes are fetched; everything else is named as unsupported without downloading."""


@dataclass(frozen=True, slots=True)
class AudioItem:
    """A voice note (or audio file, or video note) to transcribe; its bytes are in `attachment.data`
    unless `attachment.error` says why not."""

    attachment: Attachment
    media_id: int | None
    """The stored audio (kept by reference, so a better transcription can be made of it later)."""


@dataclass(slots=True)
class Intake:
    """What a message's attachments became."""

    blocks: list[Block] = field(default_factory=list)
    """`media_ref` blocks, in the order the files were sent (they go before the text)."""
    labels: list[str] = field(default_factory=list)
    """Short text for each item (`[photo m12]`, a text file's content, `[sent a voice message...]`)."""
    media_ids: tuple[int, ...] = ()
    problems: list[Problem] = field(default_factory=list)
    text_chars: int = 0
    """Characters of text files included (large ones are counted off the event loop)."""
    answerable: bool = False
    """Something the model can look at or read came with the message (worth a reply on its own)."""
    audio: list[AudioItem] = field(default_factory=list)
    """Sound to transcribe (only when the intake keeps audio); labels come from the voice step."""


def wants_bytes(attachment: Attachment, *, audio: bool = False) -> bool:
    if attachment.fetch is None:
        return False
    if attachment.kind in AUDIO_KINDS:
        return audio
    if attachment.kind not in READABLE_KINDS:
        return False
    if attachment.kind != "document":
        return True
    mime = (attachment.mime_type or "").lower()
    declared = declared_route(mime, attachment.filename)
    # An unknown type is fetched only when it might still be text (no type, or a generic one).
    return declared is not Route.UNSUPPORTED or not mime or mime == "application/octet-stream"


async def fetch_attachments(
    msg: IncomingMessage, *, max_bytes: int, audio_max_bytes: int | None = None
) -> IncomingMessage:
    """The message with the bytes of every readable attachment downloaded (or the reason why not);
    with `audio_max_bytes`, voice notes, audio files and video notes too, up to that size (the
    transcription endpoint's limit, not the media one)."""
    if not msg.attachments:
        return msg
    fetched = await asyncio.gather(*(_fetch_one(a, max_bytes, audio_max_bytes) for a in msg.attachments))
    return dataclasses.replace(msg, attachments=tuple(fetched))


async def _fetch_one(attachment: Attachment, max_bytes: int, audio_max_bytes: int | None) -> Attachment:
    if (
        attachment.data is not None
        or attachment.error is not None
        or not wants_bytes(attachment, audio=audio_max_bytes is not None)
    ):
        return attachment
    assert attachment.fetch is not None
    if attachment.kind in AUDIO_KINDS and audio_max_bytes is not None:
        max_bytes = audio_max_bytes
    if attachment.size is not None and attachment.size > max_bytes:
        return dataclasses.replace(attachment, error=_too_big(attachment.size, max_bytes))
    try:
        data = await attachment.fetch()
    except MediaFetchError as exc:
        logger.warning(
            "attachment %s could not be downloaded: %s", attachment.filename or attachment.kind, exc
        )
        return dataclasses.replace(attachment, error=exc.reason)
    if len(data) > max_bytes:
        return dataclasses.replace(attachment, error=_too_big(len(data), max_bytes))
    return dataclasses.replace(attachment, data=bytes(data))


def _too_big(size: int, max_bytes: int) -> str:
    return f"it is {size / MB:.1f} MB and the limit is {max_bytes // MB} MB"


class MediaIntake:
    """Prepares and stores a message's attachments for one chat at a time."""

    def __init__(
        self,
        store: MediaStore,
        *,
        limits: MediaLimits,
        max_bytes: int = 20 * MB,
        presence: MediaPresence | None = None,
        audio_max_bytes: int | None = None,
    ) -> None:
        self.store = store
        self.limits = limits
        self.max_bytes = max_bytes
        self.presence = presence
        self.audio_max_bytes = audio_max_bytes
        """Fetch and store voice notes, audio files and video notes up to this size (transcription is
        on; its endpoint's limit), or leave them (None)."""

    @property
    def keep_audio(self) -> bool:
        return self.audio_max_bytes is not None

    async def fetch(self, msg: IncomingMessage) -> IncomingMessage:
        return await fetch_attachments(msg, max_bytes=self.max_bytes, audio_max_bytes=self.audio_max_bytes)

    async def take(self, msg: IncomingMessage, chat_pk: int) -> Intake:
        """Prepare and store the (already fetched) attachments of `msg` for chat `chat_pk`."""
        result = Intake()
        ids: list[int] = []
        for attachment in msg.attachments:
            await self._take_one(attachment, chat_pk, result, ids)
        result.media_ids = tuple(ids)
        if result.blocks and self.presence is not None:
            self.presence.note(chat_pk)
        return result

    async def _take_one(self, att: Attachment, chat_pk: int, out: Intake, ids: list[int]) -> None:
        if att.kind == "sticker" and att.fetch is None and att.data is None and att.error is None:
            # An animated sticker without a still thumbnail: its emoji says what it meant.
            out.labels.append(f"[sticker {att.label}]" if att.label else "[sticker]")
            out.answerable = True
            return
        if att.kind in AUDIO_KINDS and self.keep_audio:
            await self._keep_audio(att, chat_pk, out, ids)
            return
        if att.kind not in READABLE_KINDS:
            out.labels.append(notes.unreadable_label(att.kind, att.filename, None, att.label))
            out.problems.append(Problem(att.kind, att.filename))
            return
        if att.data is None:
            reason = att.error or "this type of file is not supported"
            out.labels.append(notes.unreadable_label(att.kind, att.filename, reason))
            out.problems.append(Problem(att.kind, att.filename, reason))
            return
        prepared = await asyncio.to_thread(
            prepare, att.data, mime_type=att.mime_type, filename=att.filename, limits=self.limits
        )
        if isinstance(prepared, Refused):
            out.labels.append(notes.unreadable_label(att.kind, att.filename, prepared.reason))
            out.problems.append(Problem(att.kind, att.filename, prepared.reason))
        elif isinstance(prepared, PreparedText):
            text = notes.text_document(att.filename, prepared.text, prepared.note)
            out.labels.append(text)
            out.text_chars += len(text)
            out.answerable = True
        elif isinstance(prepared, PreparedImage):
            image = NewMedia(
                kind="image",
                media_type=prepared.media_type,
                data=prepared.data,
                tokens=prepared.tokens,
                width=prepared.width,
                height=prepared.height,
                filename=att.filename,
            )
            info = await self._keep(image, chat_pk, out, ids)
            out.labels.append(notes.image_label(info.id, att.kind, att.filename, att.label))
        elif isinstance(prepared, PreparedPdf):
            pdf = NewMedia(
                kind="document",
                media_type="application/pdf",
                data=prepared.data,
                tokens=prepared.tokens,
                pages=prepared.pages,
                filename=att.filename,
            )
            info = await self._keep(pdf, chat_pk, out, ids)
            out.labels.append(notes.pdf_label(info.id, att.filename, prepared.pages))

    async def _keep(self, media: NewMedia, chat_pk: int, out: Intake, ids: list[int]) -> MediaInfo:
        """Store an image or a PDF once per chat and put its reference in the message."""
        info = await self.store.put(chat_pk, media)
        ids.append(info.id)
        out.blocks.append(
            media_ref(
                media_id=info.id,
                kind="image" if media.kind == "image" else "document",
                media_type=info.media_type,
                tokens=info.tokens,
                name=media.filename,
                width=info.width,
                height=info.height,
                pages=info.pages,
            )
        )
        out.answerable = True
        return info

    async def _keep_audio(self, att: Attachment, chat_pk: int, out: Intake, ids: list[int]) -> None:
        """Store the sound once per chat (age-limited like other media) and queue it for transcription."""
        if att.data is None:
            out.audio.append(AudioItem(att, None))
            return
        info = await self.store.put(
            chat_pk,
            NewMedia(
                kind="audio",
                media_type=(att.mime_type or "application/octet-stream")[:64],
                data=att.data,
                tokens=0,  # never sent to the model: its transcript is
                filename=att.filename,
            ),
        )
        ids.append(info.id)
        out.audio.append(AudioItem(att, info.id))
