"""A Discord image attachment through the real gateway process, discord.py and the fake Discord CDN:
the model is shown the image with the message text, and the reply arrives."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from PIL import Image

from tests.e2e.test_discord_chat import ANN, DM_ANN, discord_world
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
