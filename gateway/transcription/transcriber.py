"""The transcriber built from `Settings.transcription` (None when it is off), and the limits a voice note
must meet before any byte is sent: its length, as the platform declares it, and its size."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.config import TranscriptionSettings
from gateway.errors import TranscriptionError
from gateway.transcription.speech_api import Transcript, TranscriptionClient

MB = 1024 * 1024


def clock_text(seconds: float) -> str:
    """`0:07`, `12:30`, `1:02:03`."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass(frozen=True, slots=True)
class Transcriber:
    """One endpoint and the limits it is used within."""

    client: TranscriptionClient
    max_duration_s: int
    max_bytes: int

    @property
    def model(self) -> str:
        return self.client.model

    @property
    def status(self) -> str:
        return (
            f"voice notes: transcribed by {self.client.model} at {self.client.url} "
            f"(up to {clock_text(self.max_duration_s)}, {self.max_bytes // MB} MB)"
        )

    def check(self, *, duration_s: float | None, size: int | None) -> None:
        """Raise `TranscriptionError` when a voice note is over a limit (before it is downloaded)."""
        if duration_s is not None and duration_s > self.max_duration_s:
            raise TranscriptionError(
                f"it is {clock_text(duration_s)} long and the limit is {clock_text(self.max_duration_s)}",
                cause="too_long",
            )
        if size is not None and size > self.max_bytes:
            raise TranscriptionError(
                f"it is {size / MB:.1f} MB and the limit is {self.max_bytes // MB} MB", cause="too_large"
            )

    async def transcribe(
        self, audio: bytes, *, mime_type: str | None, filename: str | None, duration_s: float | None
    ) -> Transcript:
        self.check(duration_s=duration_s, size=len(audio))
        return await self.client.transcribe(audio, mime_type=mime_type, filename=filename)

    async def close(self) -> None:
        await self.client.close()


def transcriber_from(settings: TranscriptionSettings) -> Transcriber | None:
    if settings.provider == "off":
        return None
    # The settings validator makes base_url and model required for "openai".
    assert settings.base_url is not None
    assert settings.model is not None
    client = TranscriptionClient(
        base_url=str(settings.base_url),
        model=settings.model,
        api_key=settings.api_key.get_secret_value() if settings.api_key is not None else None,
        language=settings.language,
        prompt=settings.prompt,
        timeout_s=settings.timeout_s,
    )
    return Transcriber(
        client=client, max_duration_s=settings.max_duration_s, max_bytes=settings.max_file_mb * MB
    )
