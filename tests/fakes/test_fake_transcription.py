"""The fake speech-to-text endpoint answers as OpenAI's does: multipart fields, bearer key, formats,
sizes, error shapes, scripted transcripts, failures and slow answers (through a plain aiohttp client)."""

from __future__ import annotations

import io
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.fakes.transcription import MAX_BYTES, FakeTranscription


@pytest.fixture
async def fake() -> AsyncIterator[FakeTranscription]:
    async with FakeTranscription() as server:
        yield server


async def post(
    fake: FakeTranscription,
    *,
    audio: bytes | None = b"OggS-audio",
    filename: str = "note.ogg",
    model: str | None = "whisper-1",
    key: str | None = "stt-key",
    **fields: str,
) -> tuple[int, Any]:
    form = aiohttp.FormData()
    if audio is not None:
        form.add_field("file", io.BytesIO(audio), filename=filename, content_type="audio/ogg")
    if model is not None:
        form.add_field("model", model)
    for name, value in fields.items():
        form.add_field(name, value)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        aiohttp.ClientSession() as session,
        session.post(fake.url + "/audio/transcriptions", data=form, headers=headers) as response,
    ):
        body = (
            await response.json(content_type=None)
            if response.content_type == "application/json"
            else await response.text()
        )
        return response.status, body


async def test_a_transcript_for_scripted_bytes_and_the_fields_are_recorded(fake: FakeTranscription) -> None:
    fake.say(b"OggS-audio", "meet me at the blue door")
    status, body = await post(fake, language="en", prompt="door")
    assert (status, body) == (200, {"text": "meet me at the blue door"})
    [record] = fake.requests
    assert record.fields == {"model": "whisper-1", "language": "en", "prompt": "door"}
    assert (record.filename, record.content_type, record.audio) == ("note.ogg", "audio/ogg", b"OggS-audio")
    assert record.authorization == "Bearer stt-key"


async def test_queued_transcripts_then_a_default_and_plain_text_format(fake: FakeTranscription) -> None:
    fake.script("first", "second")
    assert (await post(fake))[1] == {"text": "first"}
    assert (await post(fake, response_format="text"))[1] == "second\n"
    assert (await post(fake))[1] == {"text": "(fake transcript of 10 bytes)"}


@pytest.mark.parametrize(
    ("kwargs", "status", "param"),
    [
        ({"key": None}, 401, None),
        ({"key": "wrong"}, 401, None),
        ({"audio": None}, 400, "file"),
        ({"model": None}, 400, "model"),
        ({"model": "tiny"}, 400, "model"),
        ({"filename": "note.txt"}, 400, "file"),
        ({"audio": b""}, 400, "file"),
    ],
)
async def test_refusals_have_openais_error_shape(
    fake: FakeTranscription, kwargs: dict[str, Any], status: int, param: str | None
) -> None:
    got, body = await post(fake, **kwargs)
    assert got == status
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["param"] == param
    assert not fake.answered


async def test_a_file_past_25_mb_is_refused_with_413(fake: FakeTranscription) -> None:
    status, body = await post(fake, audio=bytes(MAX_BYTES + 1))
    assert status == 413
    assert "Maximum content size" in body["error"]["message"]


async def test_failures_are_served_in_order_then_it_answers_again(fake: FakeTranscription) -> None:
    fake.fail(503, times=1)
    fake.fail(429, times=1)
    assert (await post(fake))[0] == 503
    assert (await post(fake))[0] == 429
    assert (await post(fake))[0] == 200


async def test_slow_mode_delays_the_answer(fake: FakeTranscription) -> None:
    fake.delay_s = 0.3
    started = time.perf_counter()
    assert (await post(fake))[0] == 200
    assert time.perf_counter() - started >= 0.3
