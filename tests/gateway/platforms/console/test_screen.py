"""What the console prints: a streamed reply rendered row by row as `render_reply` renders the whole text,
the final text (with its notices) printed once, and a note before answering a message from before a
restart."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from gateway.platforms.base import OutgoingMessage
from gateway.platforms.console.adapter import CHAT
from gateway.platforms.console.screen import Screen, message_id
from gateway.platforms.console.stream_render import ReplyStream
from gateway.platforms.console.terminal_render import Style, render_reply

REPLY = (
    "## Restarting the worker\n\nThe worker restarts **complete** after the queue drains; afterwards "
    "check the logs for errors and warnings, and read `systemctl status` output before you go on.\n\n"
    "```sh\nsudo systemctl restart gateway-worker\n```\n\n- a bullet long enough to wrap past the edge "
    "of a narrow terminal\n- two\n\nDone."
)


def streamed(text: str, style: Style) -> list[str]:
    stream = ReplyStream(style)
    rows: list[str] = []
    for end in range(1, len(text) + 1):
        rows += stream.feed(text[:end])
    return rows + stream.finish(text)


def test_a_reply_fed_a_character_at_a_time_gives_the_rows_of_the_whole_reply() -> None:
    for style in (Style(color=False, width=40), Style(color=True, width=60), Style(color=False, width=None)):
        whole = [row if row.strip() else "" for row in render_reply(REPLY, style).splitlines()]
        assert streamed(REPLY, style) == whole


def test_rows_of_a_long_paragraph_are_printed_before_it_ends() -> None:
    stream = ReplyStream(Style(color=False, width=30))
    rows = stream.feed("one two three four five six seven eight nine ten eleven twel")
    assert rows == ["bot> one two three four five", "     six seven eight nine ten"]
    assert stream.feed("one two three four five six seven eight nine ten eleven twelve **bo") == []


async def test_a_streamed_reply_with_a_notice_is_printed_once_with_the_notice_under_it() -> None:
    out = io.StringIO()
    screen = Screen(out=out)
    mine = message_id(datetime.now(UTC), 1)
    screen.sent(mine)
    live = screen.live(mine)
    await live.preview(0, "REPLY-14 first line\nsecond", None)
    notice = "(Context compacted: 30→8 messages, 9,000→2,000 tokens.)"
    screen.show(
        OutgoingMessage(CHAT, f"{notice}\n\nREPLY-14 first line\nsecond line", reply_to_message_id=mine)
    )
    assert out.getvalue().splitlines() == [
        "bot> REPLY-14 first line",
        "     second line",
        f"     {notice}",
    ]


async def test_a_reply_to_a_message_from_before_the_restart_says_so() -> None:
    out = io.StringIO()
    screen = Screen(out=out)
    earlier = message_id(datetime(2026, 11, 20, 9, 5, tzinfo=UTC), 7)
    screen.show(OutgoingMessage(CHAT, "the answer", reply_to_message_id=earlier))
    local = datetime(2026, 11, 20, 9, 5, tzinfo=UTC).astimezone()
    assert out.getvalue().splitlines() == [
        f"(Answering your message from {local:%H:%M}, sent before the restart.)",
        "bot> the answer",
    ]


async def test_the_working_status_lasts_until_every_message_is_answered() -> None:
    shown: list[str | None] = []
    screen = Screen(out=io.StringIO(), activity=shown.append)
    first, second = message_id(datetime.now(UTC), 1), message_id(datetime.now(UTC), 2)
    screen.sent(first)
    screen.sent(second)
    live = screen.live(first)
    await live.status("Working… (recall)")
    await live.preview(0, "answer\n", None)
    screen.show(OutgoingMessage(CHAT, "answer", reply_to_message_id=first))
    screen.show(OutgoingMessage(CHAT, "second answer", reply_to_message_id=second))
    assert shown == ["Working…", "Working…", "Working… (recall)", None, "Working…", None]


async def test_an_answer_to_a_message_from_before_the_restart_leaves_new_ones_waiting() -> None:
    shown: list[str | None] = []
    screen = Screen(out=io.StringIO(), activity=shown.append)
    mine = message_id(datetime.now(UTC), 1)
    screen.sent(mine)
    screen.show(OutgoingMessage(CHAT, "old answer", reply_to_message_id=message_id(datetime(2026, 1, 1), 9)))
    assert shown[-1] == "Working…"
    screen.show(OutgoingMessage(CHAT, "new answer", reply_to_message_id=mine))
    assert shown[-1] is None
