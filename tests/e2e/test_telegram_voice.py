"""Voice notes through the real gateway process, python-telegram-bot, the fake Bot API (voice, video
note and audio updates, getFile, downloads) and the fake speech-to-text endpoint. One gateway for the
scenarios that hear, one with transcription off."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.conftest import BOT_USERNAME, TelegramWorld, WorldFactory, body_text
from tests.fakes.transcription import FakeTranscription

ALICE, BOB = 42, 43
PRIVATE, GROUP, ROUND, BROKEN, OFF = 3001, -300300, 3003, 3004, 3005
GROUP_KW: dict[str, Any] = {"chat_type": "supergroup", "chat_title": "Ops"}
SOUND = b"OggS" + bytes(range(256)) * 4


@pytest.fixture
async def stt() -> AsyncIterator[FakeTranscription]:
    async with FakeTranscription() as server:
        yield server


def heard_env(stt: FakeTranscription, provider: str = "openai") -> dict[str, str]:
    return {
        "TELEGRAM_ALLOWED_USERS": f"{ALICE},{BOB}",
        "TRANSCRIPTION__PROVIDER": provider,
        "TRANSCRIPTION__BASE_URL": stt.url,
        "TRANSCRIPTION__API_KEY": stt.api_key or "",
        "TRANSCRIPTION__MODEL": "whisper-1",
    }


async def test_voice_notes_are_heard_through_telegram(
    telegram_world: WorldFactory, stt: FakeTranscription
) -> None:
    async with telegram_world(**heard_env(stt)) as world:
        await _private_voice_note_is_answered(world, stt)
        await _group_voice_note_is_context_for_a_mention(world, stt)
        await _video_note_is_heard(world, stt)
        await _failing_endpoint_gets_a_clear_reply_and_the_chat_goes_on(world, stt)
        log = world.gw.log_text()
        assert "voice notes: transcribed by whisper-1" in log
        assert "Traceback" not in log
        world.gw.assert_no_secret(stt.api_key or "")


async def _private_voice_note_is_answered(world: TelegramWorld, stt: FakeTranscription) -> None:
    stt.say(SOUND, "what is the capital of Portugal")
    world.tg.push_voice(PRIVATE, data=SOUND, seconds=4, user_id=ALICE)
    (reply,) = await world.wait_replies(PRIVATE, 1)
    assert "what is the capital of Portugal" in reply.visible_text
    request = body_text(world.replies()[-1])
    assert 'speaker=\\"Alice\\" duration=\\"0:04\\"' in request
    [heard] = [r for r in stt.answered if r.audio == SOUND]
    assert (heard.filename, heard.fields["model"]) == ("voice.ogg", "whisper-1")
    assert any(path.startswith("voice/") for path in world.tg.downloads)


async def _group_voice_note_is_context_for_a_mention(world: TelegramWorld, stt: FakeTranscription) -> None:
    chatter = SOUND + b"group"
    stt.say(chatter, "the staging database moves to rack nine tonight")
    calls = len(world.replies())
    world.tg.push_voice(GROUP, data=chatter, user_id=BOB, first_name="Bob", **GROUP_KW)
    await stt.wait_for(lambda: any(r.audio == chatter for r in stt.answered))
    world.tg.push_message(GROUP, f"@{BOT_USERNAME} where does staging move?", user_id=ALICE, **GROUP_KW)
    await world.wait_replies(GROUP, 1)
    assert len(world.replies()) == calls + 1  # the voice note alone started no turn
    assert "the staging database moves to rack nine tonight" in body_text(world.replies()[-1])


async def _video_note_is_heard(world: TelegramWorld, stt: FakeTranscription) -> None:
    clip = b"\x00\x00\x00\x18ftypmp42" + bytes(300)
    stt.say(clip, "look at this bird")
    world.tg.push_video_note(ROUND, clip, seconds=6, user_id=ALICE)
    (reply,) = await world.wait_replies(ROUND, 1)
    assert "look at this bird" in reply.visible_text
    [heard] = [r for r in stt.answered if r.audio == clip]
    assert heard.filename == "video_note.mp4"


async def _failing_endpoint_gets_a_clear_reply_and_the_chat_goes_on(
    world: TelegramWorld, stt: FakeTranscription
) -> None:
    calls = len(world.replies())
    stt.fail(503)
    world.tg.push_voice(BROKEN, data=SOUND + b"x", user_id=ALICE)
    (refusal,) = await world.wait_replies(BROKEN, 1)
    assert refusal.visible_text == (
        "I couldn't transcribe your voice message: the transcription service failed (HTTP 503)."
    )
    assert len(world.replies()) == calls
    world.tg.push_message(BROKEN, "did my voice note arrive?", user_id=ALICE)
    await world.wait_replies(BROKEN, 2)
    assert "could not be transcribed: the transcription service failed (HTTP 503)" in body_text(
        world.replies()[-1]
    )


async def test_transcription_off_makes_no_call_and_downloads_nothing(
    telegram_world: WorldFactory, stt: FakeTranscription
) -> None:
    async with telegram_world(**heard_env(stt, provider="off")) as world:
        world.tg.push_voice(OFF, data=SOUND, user_id=ALICE)
        (reply,) = await world.wait_replies(OFF, 1)
        assert "I can't read voice messages yet" in reply.visible_text
        assert stt.requests == []
        assert not any(path.startswith("voice/") for path in world.tg.downloads)
