"""A protocol-level fake of the OpenAI speech-to-text API (`POST /v1/audio/transcriptions`) on 127.0.0.1.

It reads the multipart body as the real endpoint does: `file` (with a file name whose extension names
the format), `model`, and the optional `language`, `prompt`, `response_format` (json, text,
verbose_json), and answers `{"text": ...}`. Errors have OpenAI's shape,
`{"error": {"message", "type", "param", "code"}}`: 401 for a missing or wrong bearer key, 400 for a
missing field, an unknown model or an unsupported format, 413 past 25 MB. Transcripts are scripted by
the audio's bytes (`say`) or queued (`script`); `fail` answers the next requests with an error status
and `delay_s` makes every answer slow.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from aiohttp import BodyPartReader, web

from tests.fakes.local_server import LocalServer

MAX_BYTES = 25 * 1024 * 1024
FORMATS = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")
MODELS = frozenset({"whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe", "whisper-large-v3"})


@dataclass(slots=True)
class Recorded:
    fields: dict[str, str]
    filename: str | None
    content_type: str | None
    audio: bytes
    authorization: str | None
    status: int
    extra: dict[str, Any] = field(default_factory=dict)


def _error(
    message: str, *, kind: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class FakeTranscription(LocalServer):
    def __init__(self, *, api_key: str | None = "stt-key", host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host=host, port=port)
        self.api_key = api_key
        self.requests: list[Recorded] = []
        self.delay_s = 0.0
        self._failures: list[int] = []
        self._said: dict[bytes, str] = {}
        self._queued: list[str] = []
        self._answered = asyncio.Event()

    @property
    def url(self) -> str:
        """The API root a client is configured with (`.../v1`)."""
        return self.base_url + "/v1"

    def say(self, audio: bytes, text: str) -> None:
        """Answer `text` whenever these exact bytes are sent."""
        self._said[audio] = text

    def script(self, *texts: str) -> None:
        """Answer these texts, in order, to the next requests whose bytes were not `say`-scripted."""
        self._queued.extend(texts)

    def fail(self, status: int = 500, times: int = 1) -> None:
        """Answer the next `times` well-formed requests with `status`."""
        self._failures += [status] * times

    @property
    def answered(self) -> list[Recorded]:
        return [r for r in self.requests if r.status == 200]

    async def wait_for(self, done: Callable[[], bool], timeout: float = 10.0) -> None:
        """Until `done()` holds, checked after each answer."""
        async with asyncio.timeout(timeout):
            while not done():
                self._answered.clear()
                await self._answered.wait()

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BYTES * 2)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        return app

    async def _transcriptions(self, request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization")
        record = Recorded({}, None, None, b"", auth, 0)
        self.requests.append(record)

        def answer(status: int, payload: Any) -> web.Response:
            record.status = status
            self._answered.set()
            return web.json_response(payload, status=status)

        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            if auth is None:
                return answer(401, _error("You didn't provide an API key.", code=None))
            return answer(401, _error("Incorrect API key provided.", code="invalid_api_key"))
        if not (request.content_type or "").startswith("multipart/form-data"):
            return answer(400, _error("Expected a multipart/form-data body.", param="file"))
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader) or part.name is None:
                continue
            if part.name == "file":
                record.filename = part.filename
                record.content_type = part.headers.get("Content-Type")
                record.audio = bytes(await part.read())
            else:
                record.fields[part.name] = await part.text()
        if len(record.audio) > MAX_BYTES:
            return answer(
                413, _error(f"Maximum content size limit ({MAX_BYTES}) exceeded.", kind="server_error")
            )
        if record.filename is None:
            return answer(400, _error("Missing required parameter: 'file'.", param="file"))
        model = record.fields.get("model")
        if not model:
            return answer(400, _error("Missing required parameter: 'model'.", param="model"))
        if model not in MODELS:
            return answer(400, _error(f"Invalid model {model!r}.", param="model", code="model_not_found"))
        ext = PurePosixPath(record.filename).suffix.lower().lstrip(".")
        if ext not in FORMATS:
            return answer(
                400, _error(f"Invalid file format. Supported formats: {list(FORMATS)}", param="file")
            )
        if not record.audio:
            return answer(400, _error("Audio file is empty.", param="file"))
        response_format = record.fields.get("response_format", "json")
        if response_format not in ("json", "text", "verbose_json"):
            return answer(400, _error("Invalid response_format.", param="response_format"))
        if self.delay_s:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.delay_s)
        if self._failures:
            status = self._failures.pop(0)
            kind = "server_error" if status >= 500 else "invalid_request_error"
            return answer(status, _error(f"fake failure {status}", kind=kind))
        text = self._said.get(record.audio)
        if text is None:
            text = self._queued.pop(0) if self._queued else f"(fake transcript of {len(record.audio)} bytes)"
        if response_format == "text":
            record.status = 200
            self._answered.set()
            return web.Response(text=text + "\n", content_type="text/plain")
        payload: dict[str, Any] = {"text": text}
        if response_format == "verbose_json":
            payload |= {
                "task": "transcribe",
                "language": record.fields.get("language", "english"),
                "segments": [],
            }
        return answer(200, payload)
