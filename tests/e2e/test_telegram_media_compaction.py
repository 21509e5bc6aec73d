"""A group shares 40 photos overnight without addressing the bot; in the morning the session is compacted
before the turn. Afterwards requests carry the summary's references instead of the old images, the
summary names them, `view_media` shows one of them to the model again, and another chat cannot see it.
Real gateway process, python-telegram-bot, fake Bot API and fake Anthropic API, SQLite and Postgres."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.e2e.conftest import BOT_USERNAME, TelegramWorld, WorldFactory, body_text
from tests.fakes.anthropic import RecordedRequest
from tests.support.media_files import image_bytes

ALICE, BOB, CAROL = 42, 43, 44
GROUP, OTHER = -100700, 3044
WINDOW = 20_000
GROUP_KW: dict[str, Any] = {"chat_type": "supergroup", "chat_title": "Site photos"}


def image_blocks(record: RecordedRequest) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for message in record.body["messages"]:
        if not isinstance(message["content"], list):
            continue
        for block in message["content"]:
            if block.get("type") == "image":
                found.append(block)
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                found.extend(b for b in block["content"] if b.get("type") == "image")
    return found


async def test_forty_photos_compacted_overnight(telegram_world: WorldFactory) -> None:
    async with telegram_world(
        context_window=WINDOW,
        TELEGRAM_ALLOWED_USERS=f"{ALICE},{BOB},{CAROL}",
        COMPRESSION__PROTECT_LAST_N="2",
        PROMPT_CACHING__CACHE_TTL="5m",
    ) as world:
        photos = [image_bytes(640, 480, seed=100 + i) for i in range(40)]
        await _overnight_and_morning(world, photos)
        await _view_media_brings_one_back(world, photos)
        await _other_chats_cannot_see_it(world)


async def _overnight_and_morning(world: TelegramWorld, photos: list[bytes]) -> None:
    # 40 photos of 640x480 (410 tokens each as the API counts them) cross 85% of the 20,000-token window.
    world.tg.push_message(
        GROUP, f"@{BOT_USERNAME} morning, I'll post the site photos here", user_id=ALICE, **GROUP_KW
    )
    await world.wait_replies(GROUP, 1)
    for i, data in enumerate(photos):
        world.tg.push_photo(GROUP, data, caption=f"bay {i}", user_id=BOB, first_name="Bob", **GROUP_KW)
    await world.tg.wait_for(lambda: len(world.tg.downloads) >= 40, timeout=60)
    world.tg.push_message(GROUP, f"@{BOT_USERNAME} which bays still need work?", user_id=ALICE, **GROUP_KW)
    await world.wait_replies(GROUP, 2, timeout=60)
    summaries = [r for r in world.llm.requests if r.kind == "summary" and r.status == 200]
    assert summaries, "the overnight accumulation was compacted before the turn"
    assert image_blocks(summaries[-1]), "the summary call looked at the images it summarized"
    morning = world.replies()[-1]
    request = body_text(morning)
    assert "[image m1: " in request  # the summary names the compacted photos by id
    sent = [base64.b64decode(b["source"]["data"]) for b in image_blocks(morning)]
    assert 1 <= len(sent) <= 4  # only the newest photos (the protected tail) still travel as images
    assert sent == photos[-len(sent) :]  # the old ones are references in the summary, not re-sent
    assert len(sent) == len(set(sent))  # never the same image twice


async def _view_media_brings_one_back(world: TelegramWorld, photos: list[bytes]) -> None:
    world.llm.script_reply(tool_uses=[{"name": "view_media", "input": {"media_id": "m1"}}])
    world.tg.push_message(GROUP, f"@{BOT_USERNAME} show me bay 0 again", user_id=ALICE, **GROUP_KW)
    await world.wait_replies(GROUP, 3, timeout=30)
    after_tool = world.replies()[-1]
    shown = [base64.b64decode(b["source"]["data"]) for b in image_blocks(after_tool)]
    assert photos[0] in shown


async def _other_chats_cannot_see_it(world: TelegramWorld) -> None:
    # Carol's chat has a photo of its own, so the tool is offered there; the group's m1 is not hers.
    world.tg.push_photo(OTHER, image_bytes(320, 240, seed=999), caption="my photo", user_id=CAROL)
    await world.wait_replies(OTHER, 1, timeout=30)
    world.llm.script_reply(tool_uses=[{"name": "view_media", "input": {"media_id": "m1"}}])
    world.tg.push_message(OTHER, "show me m1", user_id=CAROL)
    await world.wait_replies(OTHER, 2, timeout=30)
    request = world.replies()[-1]
    assert len(image_blocks(request)) == 1  # her own photo, not the group's
    assert "No image or PDF m1 in this chat" in json.dumps(request.body["messages"])
    assert {t["name"] for t in request.body["tools"]} == {"recall", "current_time", "view_media"}
