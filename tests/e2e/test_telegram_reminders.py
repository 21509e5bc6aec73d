"""Reminders through the real gateway process and the Telegram fake: the model calls `schedule_message`,
the user reads the gateway's own confirmation, and at the time the reminder arrives in the forum topic
it was set in, word for word, once; `/reminders` lists it before, and a reply to it has its context."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.conftest import BOT_USERNAME, WorldFactory, body_text

pytestmark = pytest.mark.e2e

FORUM = -100700
ALICE = 4242
TOPIC = 31
LEAD_S = 8
LATE_S = 8
"""The ticker looks every 0.5 s here; the slack is for a machine busy with other tests."""
FORUM_KW = {
    "chat_type": "supergroup",
    "chat_title": "Forum",
    "is_topic_message": True,
    "message_thread_id": TOPIC,
}


async def test_a_reminder_the_model_schedules_arrives_in_its_topic_once(telegram_world: WorldFactory) -> None:
    async with telegram_world(
        TELEGRAM_ALLOWED_USERS=str(ALICE),
        SCHEDULER__ENABLED="true",
        REMINDERS__ENABLED="true",
        REMINDERS__TICK_S="0.5",
        REMINDERS__DEFAULT_TIMEZONE="Europe/Berlin",
    ) as world:
        assert {"reminders", "timezone"} <= {c["command"] for c in world.tg.commands}
        # far enough ahead that the turn and /reminders are done first on a loaded machine
        at = (datetime.now(UTC) + timedelta(seconds=LEAD_S)).replace(microsecond=0)
        world.llm.script_schedule_message(at.isoformat(), "Drink water", then="I'll remind you.")
        world.tg.push_message(
            FORUM, f"@{BOT_USERNAME} remind me to drink water in a moment", user_id=ALICE, **FORUM_KW
        )
        confirmation, answer = await world.wait_replies(FORUM, 2, thread_id=TOPIC, timeout=30)
        assert confirmation.visible_text.startswith("⏰ Reminder #1 set for ")
        assert confirmation.visible_text.endswith('(Europe/Berlin): "Drink water"')
        assert answer.visible_text.endswith("I'll remind you.")
        result = body_text(world.replies()[-1])
        assert "Scheduled #1 for" in result

        world.tg.push_message(FORUM, f"/reminders@{BOT_USERNAME}", user_id=ALICE, **FORUM_KW)
        listing = (await world.wait_replies(FORUM, 3, thread_id=TOPIC))[2].visible_text
        assert listing.startswith("Pending reminders (Europe/Berlin):\n#1 ")
        assert listing.endswith("once: Drink water\nCancel one with /reminders cancel <id>.")

        reminder = (await world.wait_replies(FORUM, 4, thread_id=TOPIC, timeout=30))[3]
        arrived = datetime.now(UTC)
        assert reminder.visible_text == "⏰ Reminder: Drink water"
        assert reminder.message_thread_id == TOPIC
        assert arrived - at < timedelta(seconds=LATE_S), "sent within seconds of its time"
        calls = len(world.replies())  # no model call made the reminder

        # A reply to the reminder (once it is recorded): the model sees it in the history.
        await world.gw.wait_log("reminder 1 due .* delivered")
        world.tg.push_message(FORUM, "done, thanks", user_id=ALICE, reply_to_bot=True, **FORUM_KW)
        await world.wait_replies(FORUM, 5, thread_id=TOPIC)
        assert calls == 2
        assert "⏰ Reminder: Drink water" in body_text(world.replies()[-1])
        assert len([s for s in world.sent_to(FORUM) if "Reminder: Drink water" in s.visible_text]) == 1
