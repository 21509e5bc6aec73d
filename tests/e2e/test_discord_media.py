"""A Discord image attachment through the real gateway process, discord.py and the fake Discord CDN:
the model is shown the image with the message text, and the reply arrives."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from PIL import Image

from tests.e2e.test_discord_chat import ANN, BOB, DM_ANN, GENERAL, GUILD, discord_world
from tests.fakes.transcription import FakeTranscription
from tests.support.media_files import image_bytes


async def test_discord_image_attachment_reaches_the_model(tmp_path: Path, db_url: str) -> None:
    async with discord_world(tmp_path, db_url) as w:
        png = image_bytes(900, 600, "PNG")
        attachment = w.dc.attachment("chart.png", "image/png", png, width=900, height=600)
        reply = await w.reply_to(
            lambda: w.dc.push_message(
                DM_ANN, "what trend does this show?", author_id=ANN, username="ann", attachments=[attachment]
            )
        )
        assert "what trend does this show?" in reply.content
        assert w.dc.downloads == ["chart.png"]
        request = [r for r in w.llm.requests if r.kind == "reply"][-1]
        images = [
            block
            for message in request.body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "image"
        ]
        assert len(images) == 1
        assert images[0]["source"]["media_type"] == "image/png"
        decoded = Image.open(io.BytesIO(base64.b64decode(images[0]["source"]["data"])))
        assert decoded.size == (900, 600)
        assert "what trend does this show?" in json.dumps(request.body["messages"])
        rows = await w.wait_rows(DM_ANN, lambda rows: any(r.role == "assistant" for r in rows))
        assert [b["type"] for b in rows[0].content][1:] == ["media_ref", "text"]  # type: ignore[index, union-attr]


async def test_discord_voice_messages_are_heard_in_dms_and_guild_channels(
    tmp_path: Path, db_url: str
) -> None:
    """A voice message (IS_VOICE_MESSAGE flag, duration, waveform) through discord.py: heard and
    answered in a DM; stored as context in a guild channel, where a later mention is answered from it."""
    async with FakeTranscription() as stt:
        env = {
            "TRANSCRIPTION__PROVIDER": "openai",
            "TRANSCRIPTION__BASE_URL": stt.url,
            "TRANSCRIPTION__API_KEY": stt.api_key or "",
            "TRANSCRIPTION__MODEL": "whisper-1",
        }
        async with discord_world(tmp_path, db_url, **env) as w:
            dm_sound, guild_sound = b"OggS-dm" + bytes(400), b"OggS-guild" + bytes(400)
            stt.say(dm_sound, "can you summarise the incident from last night")
            stt.say(guild_sound, "the release is frozen until Thursday")
            reply = await w.reply_to(
                lambda: w.dc.push_message(
                    DM_ANN,
                    "",
                    author_id=ANN,
                    username="ann",
                    attachments=[w.dc.voice_attachment(dm_sound, seconds=5)],
                )
            )
            assert "can you summarise the incident from last night" in reply.content
            assert 'duration=\\"0:05\\"' in w.last_request_text()
            [heard] = [r for r in stt.answered if r.audio == dm_sound]
            assert (heard.filename, heard.content_type) == ("voice-message.ogg", "audio/ogg")

            w.dc.push_message(
                GENERAL,
                "",
                author_id=BOB,
                username="bob",
                guild_id=GUILD,
                attachments=[w.dc.voice_attachment(guild_sound)],
            )
            await w.wait_rows(GENERAL, lambda rows: any("release is frozen" in r.text for r in rows))
            await w.reply_to(
                lambda: w.dc.push_message(
                    GENERAL,
                    "until when is it frozen?",
                    author_id=ANN,
                    username="ann",
                    guild_id=GUILD,
                    mentions_bot=True,
                )
            )
            assert "the release is frozen until Thursday" in w.last_request_text()
