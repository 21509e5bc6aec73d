"""Voice notes through the real pipeline, store and Anthropic fake, heard by the fake speech-to-text
endpoint: what is stored (transcript as tagged data, the sound by reference), what is answered, what
the sender is told when hearing fails, and what `/stats`, the metrics and recall see."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent.tools.recall_types import RecallQuery
from gateway.errors import MediaFetchError
from gateway.platforms.base import Attachment
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.transcription import FakeTranscription
from tests.support.gateway_bot import Bot, running_bot
from tests.support.memory_adapter import ADMIN, BOB, group_chat

GROUP = group_chat("-100", "Team")
SOUND = b"OggS" + bytes(range(200))


class Download:
    def __init__(self, data: bytes | None = None, error: str | None = None) -> None:
        self.data, self.error, self.calls = data, error, 0

    async def __call__(self) -> bytes:
        self.calls += 1
        if self.error is not None:
            raise MediaFetchError(self.error)
        assert self.data is not None
        return self.data


def voice(data: bytes = SOUND, *, seconds: float = 7, fetch: Download | None = None) -> Attachment:
    return Attachment(
        kind="voice",
        mime_type="audio/ogg",
        size=len(data),
        duration_s=seconds,
        fetch=fetch or Download(data),
    )


def heard(**kw: Any) -> dict[str, Any]:
    return {"media": ("voice",), "attachments": (voice(**kw),)}


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def stt() -> AsyncIterator[FakeTranscription]:
    async with FakeTranscription() as server:
        yield server


def transcription(stt: FakeTranscription, **kw: Any) -> dict[str, Any]:
    return {
        "provider": "openai",
        "base_url": stt.url,
        "api_key": stt.api_key,
        "model": "whisper-1",
        **kw,
    }


@pytest.fixture
async def bot(fake: FakeAnthropic, stt: FakeTranscription, db_url: str) -> AsyncIterator[Bot]:
    async with running_bot(fake, db_url, transcription=transcription(stt, language="en")) as running:
        yield running


def last_request_text(bot: Bot) -> str:
    return str(bot.replies()[-1].body["messages"])


async def test_a_private_voice_note_is_heard_stored_and_answered(bot: Bot, stt: FakeTranscription) -> None:
    stt.say(SOUND, "remind me to water the ferns on Friday")
    replies = await bot.adapter.say("", **heard())
    [request] = stt.answered
    assert (request.fields["model"], request.fields["language"], request.filename) == (
        "whisper-1",
        "en",
        "voice.ogg",
    )
    assert request.audio == SOUND
    row, answer = await bot.window()
    assert answer.role == "assistant"
    [media_id] = await bot.rows("SELECT id FROM media WHERE kind = 'audio'")
    assert row.text == (
        f'<transcript of="voice message" speaker="Alice" duration="0:07" audio="m{media_id[0]}">\n'
        "remind me to water the ferns on Friday\n</transcript>"
    )
    assert "water the ferns on Friday" in last_request_text(bot)
    [answered] = replies
    assert "water the ferns on Friday" in answered.text
    # The sound is kept by reference, linked to its message, and never sent to the model.
    assert await bot.scalar("SELECT count(*) FROM message_media WHERE message_id = :m", m=row.id) == 1
    assert "media_ref" not in last_request_text(bot)
    outcome = await bot.rows("SELECT outcome, model, duration_s, media_id FROM transcriptions")
    assert outcome == [("ok", "whisper-1", 7.0, media_id[0])]
    metrics = bot.gateway.metrics.exposition().decode()
    assert 'gateway_transcriptions_total{outcome="ok"} 1.0' in metrics


async def test_an_unmentioned_group_voice_note_is_context_for_a_later_mention(
    bot: Bot, stt: FakeTranscription
) -> None:
    stt.say(SOUND, "the deploy key is in the blue vault")
    assert await bot.adapter.say("", chat=GROUP, user=BOB, **heard()) == []
    assert bot.replies() == []
    [row] = await bot.window("telegram", "-100")
    assert row.text.startswith('[Bob] <transcript of="voice message" speaker="Bob"')
    assert not row.needs_reply
    await bot.adapter.say("@testbot where is the key?", chat=GROUP, mentions_bot=True)
    assert "the deploy key is in the blue vault" in last_request_text(bot)


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (401, "the transcription service refused the bot's API key"),
        (503, "the transcription service failed (HTTP 503)"),
        (413, "the transcription service said the file is too large"),
    ],
)
async def test_a_refusal_gets_one_clear_reply_and_the_message_is_kept(
    bot: Bot, stt: FakeTranscription, status: int, said: str
) -> None:
    stt.fail(status)
    replies = await bot.adapter.say("", **heard())
    assert [r.text for r in replies] == [f"I couldn't transcribe your voice message: {said}."]
    assert bot.replies() == []
    [row] = await bot.window()
    assert row.text.startswith("[sent a voice message m")
    assert row.text.endswith(f"(0:07) that could not be transcribed: {said}]")
    # The chat goes on: the next voice note is heard and answered.
    stt.say(SOUND + b"2", "second try")
    assert len(await bot.adapter.say("", **heard(data=SOUND + b"2"))) == 1
    assert "second try" in last_request_text(bot)


async def test_a_slow_endpoint_times_out_and_the_caption_is_still_answered(
    fake: FakeAnthropic, stt: FakeTranscription, sqlite_url: str
) -> None:
    stt.delay_s = 5.0
    async with running_bot(fake, sqlite_url, transcription=transcription(stt, timeout_s=0.3)) as bot:
        replies = await bot.adapter.say("", caption="thoughts?", **heard())
        texts = [r.text for r in replies]
        assert texts[0] == (
            "I couldn't transcribe your voice message: the transcription service did not answer "
            "within 0.3 s. I'll answer the text of your message."
        )
        assert texts[1].startswith("echo: [sent a voice message m")
        assert texts[1].endswith("thoughts?")
        [(outcome, reason)] = await bot.rows("SELECT outcome, reason FROM transcriptions")
        assert outcome == "timeout"
        assert reason == "the transcription service did not answer within 0.3 s"


async def test_too_long_is_refused_before_any_download_or_request(
    fake: FakeAnthropic, stt: FakeTranscription, sqlite_url: str
) -> None:
    download = Download(SOUND)
    async with running_bot(fake, sqlite_url, transcription=transcription(stt, max_duration_s=60)) as bot:
        replies = await bot.adapter.say(
            "", media=("voice",), attachments=(voice(seconds=95, fetch=download),)
        )
        assert [r.text for r in replies] == [
            "I couldn't transcribe your voice message: it is 1:35 long and the limit is 1:00."
        ]
        assert download.calls == 0
        assert stt.requests == []
        assert await bot.rows("SELECT outcome FROM transcriptions") == [("too_long",)]


async def test_an_unreachable_endpoint_is_named(fake: FakeAnthropic, sqlite_url: str) -> None:
    settings = {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "whisper-1"}
    async with running_bot(fake, sqlite_url, transcription=settings) as bot:
        replies = await bot.adapter.say("", **heard())
        assert [r.text for r in replies] == [
            "I couldn't transcribe your voice message: the transcription service could not be reached."
        ]
        assert 'gateway_transcriptions_total{outcome="unreachable"} 1.0' in (
            bot.gateway.metrics.exposition().decode()
        )


async def test_recall_finds_what_was_said_in_a_voice_note_weeks_ago(bot: Bot, stt: FakeTranscription) -> None:
    stt.say(SOUND, "the spare router password is tangerine seventeen")
    weeks_ago = datetime.now(UTC) - timedelta(weeks=5)
    await bot.adapter.say("", sent_at=weeks_ago, **heard())
    await bot.adapter.say("/new")  # recall searches what the model no longer sees in full
    chat_pk = await bot.chat_pk("telegram", "42")
    found = await bot.store.search_history(chat_pk, RecallQuery(text="router password"))
    assert found.hits, "the transcript is in the full-text index"
    assert "tangerine seventeen" in found.hits[0].main.text


async def test_stats_counts_what_was_heard_and_what_failed(bot: Bot, stt: FakeTranscription) -> None:
    stt.fail(401)
    await bot.adapter.say("", user=ADMIN, **heard())
    await bot.adapter.say("", user=ADMIN, **heard(data=SOUND + b"ok"))
    [stats] = await bot.adapter.say("/stats", user=ADMIN)
    assert (
        "Voice notes: 1 transcribed, 1 failed (key refused 1); "
        "last failure: the transcription service refused the bot's API key"
    ) in stats.text.splitlines()
    [everything] = await bot.adapter.say("/stats all", user=ADMIN)
    assert "Voice notes: 1 transcribed, 1 failed" in everything.text


async def test_a_voice_note_above_the_media_limit_is_held_to_the_transcription_limit(
    fake: FakeAnthropic, stt: FakeTranscription, db_url: str
) -> None:
    """Sound goes to the speech-to-text endpoint, not to the model: `transcription.max_file_mb` is its
    limit, even where it is above `media.max_file_mb`."""
    big = b"OggS" + bytes(2 * 1024 * 1024)  # 2 MB: over a 1 MB media limit, under a 3 MB transcription one
    stt.say(big, "the long version of the plan")
    settings = {"media": {"max_file_mb": 1}, "transcription": transcription(stt, max_file_mb=3)}
    async with running_bot(fake, db_url, **settings) as bot:
        await bot.adapter.say("", **heard(data=big))
        assert [r.audio for r in stt.answered] == [big]
        assert "the long version of the plan" in last_request_text(bot)
