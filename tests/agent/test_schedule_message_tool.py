"""`schedule_message`: what the model may ask for, and what it is told when it asks wrongly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agent.errors import ToolError
from agent.tools.registry import ToolRegistry
from agent.tools.schedule_message import ScheduleRequest, parse_request, schedule_message_tool

NOW = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")
HOUR = timedelta(hours=1)


def parse(**tool_input: Any) -> ScheduleRequest:
    return parse_request(tool_input, now=NOW, tz=BERLIN, min_repeat=HOUR)


def test_a_time_with_an_offset_and_a_text_is_a_reminder() -> None:
    request = parse(at="2026-12-07T10:30:00+01:00", text=" call the bank ")
    assert request == ScheduleRequest(
        datetime(2026, 12, 7, 9, 30, tzinfo=UTC), "call the bank", None, "reminder"
    )
    assert parse(at="2026-12-07T09:30:00Z", text="x", kind="task").kind == "task"


@pytest.mark.parametrize(
    ("tool_input", "problem"),
    [
        ({"text": "x"}, "`at` is required"),
        ({"at": "tomorrow at nine", "text": "x"}, "not an RFC 3339 time"),
        ({"at": "2026-12-07T10:30:00", "text": "x"}, "needs an offset"),
        ({"at": "2026-12-07T10:30:00Z", "text": "  "}, "`text` is required"),
        ({"at": "2026-12-07T07:00:00Z", "text": "x"}, "has already passed"),
        ({"at": "2026-12-07T10:30:00Z", "text": "x", "kind": "prompt"}, "`kind` is"),
        ({"at": "2026-12-07T10:30:00Z", "text": "x", "repeat": "FREQ=SOMETIMES"}, "not a valid RRULE"),
        ({"at": "2026-12-07T10:30:00Z", "text": "x", "repeat": "FREQ=MINUTELY"}, "every 60 minutes"),
        ({"at": "2036-12-07T10:30:00Z", "text": "x"}, "five years"),
    ],
)
def test_a_bad_request_says_what_to_fix(tool_input: dict[str, Any], problem: str) -> None:
    with pytest.raises(ToolError, match=problem):
        parse_request(tool_input, now=NOW, tz=BERLIN, min_repeat=HOUR)


def test_a_repeat_may_start_in_the_past_and_takes_an_rrule_prefix() -> None:
    request = parse(at="2026-12-01T09:00:00+01:00", text="stand-up", repeat="RRULE:FREQ=WEEKLY;BYDAY=MO")
    assert request.repeat == "FREQ=WEEKLY;BYDAY=MO"


async def test_the_tool_hands_a_checked_request_to_the_gateway_and_errors_to_the_model() -> None:
    seen: list[ScheduleRequest] = []

    async def schedule(request: ScheduleRequest) -> str:
        seen.append(request)
        return "Scheduled #1"

    async def zone() -> ZoneInfo:
        return BERLIN

    tools = ToolRegistry([schedule_message_tool(schedule, clock=lambda: NOW, zone=zone, min_repeat=HOUR)])
    ok = await tools.run("schedule_message", {"at": "2026-12-08T09:00:00+01:00", "text": "Drink water"})
    bad = await tools.run("schedule_message", {"at": "2026-12-08T09:00:00", "text": "Drink water"})
    assert (ok.text, ok.is_error) == ("Scheduled #1", False)
    assert bad.is_error
    assert "needs an offset" in bad.text
    assert [r.text for r in seen] == ["Drink water"]
