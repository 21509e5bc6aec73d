"""The pipeline's voice step: voice notes, audio files and video notes become transcripts.

Before download, notes over the length or size limit are marked (never fetched). After the sound is
stored (`gateway.media.intake`), each one is sent to the transcription endpoint; the transcript joins
the message's labels as tagged data spoken by its sender (`gateway.media.notes.transcript_label`), so
the stored text, which recall's index reads, holds what was said. A failure becomes a label saying so
and a `Problem` for the one reply the sender gets; every attempt is recorded for `/stats` and counted
in the metrics.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

from gateway.errors import TranscriptionError
from gateway.intake.rendering import clean_name
from gateway.media.intake import AudioItem, Intake
from gateway.media.notes import AUDIO_KINDS, Problem, transcript_label, untranscribed_label
from gateway.platforms.base import Attachment, IncomingMessage
from gateway.store.messages.transcripts import NewTranscription, TranscriptMethods
from gateway.transcription.transcriber import Transcriber, clock_text

logger = logging.getLogger(__name__)

Observe = Callable[[str, float | None], None]
"""(outcome, seconds of the request or None when none was made): the metrics' `observe_transcription`."""


class VoiceNotes:
    def __init__(
        self, transcriber: Transcriber, *, log: TranscriptMethods, observe: Observe | None = None
    ) -> None:
        self.transcriber = transcriber
        self.log = log
        self.observe = observe

    def screen(self, msg: IncomingMessage) -> IncomingMessage:
        """`msg` with notes over a limit marked, so they are not downloaded."""
        if not any(a.kind in AUDIO_KINDS for a in msg.attachments):
            return msg
        return dataclasses.replace(msg, attachments=tuple(self._screen(a) for a in msg.attachments))

    def _screen(self, att: Attachment) -> Attachment:
        if att.kind not in AUDIO_KINDS or att.error is not None:
            return att
        try:
            self.transcriber.check(duration_s=att.duration_s, size=att.size)
        except TranscriptionError as exc:
            return dataclasses.replace(att, error=exc.reason)
        return att

    async def hear(self, msg: IncomingMessage, chat_pk: int, intake: Intake) -> None:
        """Transcribe each note of `intake.audio`, adding its label (and a problem when it failed)."""
        speaker = clean_name(msg.author.display_name)
        for item in intake.audio:
            att = item.attachment
            duration = clock_text(att.duration_s) if att.duration_s is not None else None
            started = time.perf_counter()
            requested = False
            try:
                self.transcriber.check(duration_s=att.duration_s, size=att.size)
                if att.data is None:
                    raise TranscriptionError(att.error or "it could not be downloaded", cause="download")
                requested = True
                heard = await self.transcriber.transcribe(
                    att.data, mime_type=att.mime_type, filename=att.filename, duration_s=att.duration_s
                )
            except TranscriptionError as exc:
                seconds = time.perf_counter() - started if requested else None
                await self._record(chat_pk, item, exc.cause, seconds, reason=exc.reason)
                logger.warning(
                    "%s in %s:%s not transcribed (%s): %s",
                    att.kind,
                    msg.chat.platform,
                    msg.chat.chat_id,
                    exc.cause,
                    exc.reason,
                )
                intake.labels.append(untranscribed_label(att.kind, item.media_id, duration, exc.reason))
                intake.problems.append(Problem(att.kind, None, exc.reason))
                continue
            seconds = time.perf_counter() - started
            await self._record(chat_pk, item, "ok", seconds, chars=len(heard.text))
            label = transcript_label(att.kind, item.media_id, speaker, duration, heard.text, att.filename)
            intake.labels.append(label)
            intake.text_chars += len(label)
            intake.answerable = intake.answerable or bool(heard.text)

    async def _record(
        self,
        chat_pk: int,
        item: AudioItem,
        outcome: str,
        seconds: float | None,
        *,
        chars: int = 0,
        reason: str | None = None,
    ) -> None:
        if self.observe is not None:
            self.observe(outcome, seconds)
        await self.log.record_transcription(
            chat_pk,
            NewTranscription(
                media_id=item.media_id,
                outcome=outcome,
                model=self.transcriber.model,
                duration_s=item.attachment.duration_s,
                latency_ms=round((seconds or 0.0) * 1000),
                chars=chars,
                reason=reason,
            ),
        )
