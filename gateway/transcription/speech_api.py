"""An HTTP client for `POST {base_url}/audio/transcriptions`: OpenAI (whisper-1, gpt-4o-transcribe), Groq
(whisper-large-v3), faster-whisper-server / speaches, whisper.cpp's server and LocalAI speak it.

The request is multipart: `file` (the audio; servers tell the format by the file name's extension),
`model`, `response_format=json` and, when set, `language` and `prompt`; the key goes as
`Authorization: Bearer`. The answer is `{"text": "..."}`; errors are `{"error": {"message": ...}}`
with 400 (bad audio or request), 401 (key), 413 (too large), 429 (rate limit), 5xx. Each failure is
raised as `TranscriptionError` with a cause and a reason for the sender.
"""

from __future__ import annotations

import io
import json
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import aiohttp

from gateway.errors import TranscriptionError

logger = logging.getLogger(__name__)

UPLOAD_EXTENSIONS = frozenset({"flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "wav", "webm"})
"""Extensions OpenAI's endpoint accepts (it tells the format by the name); others name by MIME type."""
_BY_MIME = {
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/x-opus+ogg": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mp4": "m4a",
    "audio/m4a": "m4a",
    "audio/x-m4a": "m4a",
    "audio/aac": "m4a",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/webm": "webm",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
    "video/mp4": "mp4",
    "video/webm": "webm",
}
_SYNONYMS = {"oga": "ogg", "opus": "ogg", "mpga": "mpga", "aac": "m4a"}


def upload_name(mime_type: str | None, filename: str | None) -> str:
    """A file name whose extension the endpoint will accept for this audio (Telegram's `.oga` -> `.ogg`)."""
    stem, ext = "voice", ""
    if filename:
        path = PurePosixPath(filename.replace("\\", "/"))
        stem = "".join(c for c in path.stem if c.isalnum() or c in "-_")[:60] or stem
        ext = path.suffix.lower().lstrip(".")
        ext = _SYNONYMS.get(ext, ext)
    if ext not in UPLOAD_EXTENSIONS:
        ext = _BY_MIME.get((mime_type or "").split(";", 1)[0].strip().lower(), "ogg")
    return f"{stem}.{ext}"


@dataclass(frozen=True, slots=True)
class Transcript:
    text: str
    model: str


class TranscriptionClient:
    """Transcribes one audio file per call with one model."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        language: str | None = None,
        prompt: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self.url = base_url.rstrip("/") + "/audio/transcriptions"
        self.model = model
        self.language = language
        self.prompt = prompt
        self.timeout_s = timeout_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._session: aiohttp.ClientSession | None = None

    def _form(self, audio: bytes, *, mime_type: str | None, filename: str | None) -> aiohttp.FormData:
        form = aiohttp.FormData()
        name = upload_name(mime_type, filename)
        # A file object, not raw bytes: aiohttp streams it (and warns that large raw bytes block the loop).
        form.add_field(
            "file", io.BytesIO(audio), filename=name, content_type=mime_type or "application/octet-stream"
        )
        form.add_field("model", self.model)
        form.add_field("response_format", "json")
        if self.language:
            form.add_field("language", self.language)
        if self.prompt:
            form.add_field("prompt", self.prompt)
        return form

    async def transcribe(
        self, audio: bytes, *, mime_type: str | None, filename: str | None, timeout_s: float | None = None
    ) -> Transcript:
        """The text spoken in `audio`; raises `TranscriptionError`."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        limit = timeout_s or self.timeout_s
        try:
            async with self._session.post(
                self.url,
                data=self._form(audio, mime_type=mime_type, filename=filename),
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=limit),
            ) as response:
                if response.status >= 400:
                    raise refused(response.status, _message(await response.text()))
                payload = await response.json(content_type=None)
        except TranscriptionError:
            raise
        except TimeoutError as exc:
            raise TranscriptionError(
                f"the transcription service did not answer within {limit:g} s", cause="timeout"
            ) from exc
        except aiohttp.ClientError as exc:
            logger.warning("transcription endpoint %s unreachable: %s: %s", self.url, type(exc).__name__, exc)
            raise TranscriptionError(
                "the transcription service could not be reached", cause="unreachable"
            ) from exc
        except ValueError as exc:  # a body that is not JSON
            raise TranscriptionError(
                "the transcription service answered something unreadable", cause="malformed"
            ) from exc
        return Transcript(text=_text(payload), model=self.model)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def refused(status: int, detail: str) -> TranscriptionError:
    """The error for an HTTP error answer, by status (never by its text)."""
    logger.warning("transcription endpoint answered %s: %s", status, detail)
    if status in (401, 403):
        return TranscriptionError(
            "the transcription service refused the bot's API key", cause="auth", status=status
        )
    if status == 413:
        return TranscriptionError(
            "the transcription service said the file is too large", cause="too_large", status=status
        )
    if status == 429:
        return TranscriptionError(
            "the transcription service is over its rate limit just now", cause="rate_limited", status=status
        )
    if 400 <= status < 500:
        return TranscriptionError(
            "the transcription service could not process this audio", cause="rejected", status=status
        )
    return TranscriptionError(
        f"the transcription service failed (HTTP {status})", cause="failed", status=status
    )


def _message(body: str) -> str:
    """The error's own message, for the log (OpenAI: `{"error": {"message": ...}}`; others: the body)."""
    try:
        payload: Any = json.loads(body)
        return str(payload["error"]["message"])[:300]
    except (ValueError, KeyError, TypeError):
        return body[:300]


def _text(payload: Any) -> str:
    text = payload.get("text") if isinstance(payload, dict) else None
    if not isinstance(text, str):
        raise TranscriptionError("the transcription service answered without a transcript", cause="malformed")
    return text.strip()
