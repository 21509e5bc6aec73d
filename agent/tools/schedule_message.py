"""The `schedule_message` tool: its definition, the validation of what the model asked for, and the
recurrence arithmetic (pure: the clock and the storing are passed in).

A repeat is an RFC 5545 RRULE read by python-dateutil. Occurrences are computed on the chat's local
wall clock and then placed in its zone, so a daily 09:00 stays 09:00 across a DST change.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from dateutil.rrule import rrule, rrulestr

from agent.errors import ToolError
from agent.tools.registry import Tool

Kind = Literal["reminder", "task"]
KINDS: tuple[Kind, ...] = ("reminder", "task")
TEXT_MAX_CHARS = 2000
HORIZON = timedelta(days=5 * 366)
"""How far ahead a first time may lie."""
PAST_GRACE = timedelta(seconds=60)
"""A one-shot time this little in the past (the model's clock reading) is taken as now."""
TOOL_NAME = "schedule_message"


@dataclass(frozen=True, slots=True)
class ScheduleRequest:
    """What the model asked for, checked: the first time (aware), the text, the rule, the kind."""

    at: datetime
    text: str
    repeat: str | None
    kind: Kind


def _local_rule(repeat: str, first: datetime, tz: ZoneInfo) -> rrule:
    start = first.astimezone(tz).replace(tzinfo=None)
    rule = rrulestr(repeat, dtstart=start, forceset=False, ignoretz=True)
    if not isinstance(rule, rrule):
        raise ValueError("one RRULE expected")
    return rule


def _placed(local: datetime, tz: ZoneInfo) -> datetime:
    return local.replace(tzinfo=tz)


def next_after(repeat: str, first: datetime, tz: ZoneInfo, after: datetime) -> datetime | None:
    """The rule's first occurrence strictly after `after` (aware), in `tz`; None when it has ended."""
    rule = _local_rule(repeat, first, tz)
    local = rule.after(after.astimezone(tz).replace(tzinfo=None), inc=False)
    return None if local is None else _placed(local, tz)


def last_until(repeat: str, first: datetime, tz: ZoneInfo, until: datetime) -> datetime | None:
    """The rule's last occurrence at or before `until` (the one catch-up after an outage)."""
    rule = _local_rule(repeat, first, tz)
    local = rule.before(until.astimezone(tz).replace(tzinfo=None), inc=True)
    return None if local is None else _placed(local, tz)


def parse_request(
    tool_input: dict[str, Any], *, now: datetime, tz: ZoneInfo, min_repeat: timedelta
) -> ScheduleRequest:
    """The tool's input checked (raises `ToolError` with what to fix)."""
    raw_at = tool_input.get("at")
    if not isinstance(raw_at, str) or not raw_at.strip():
        raise ToolError("`at` is required: an RFC 3339 time with its offset, e.g. 2026-12-08T09:00:00+01:00")
    try:
        at = datetime.fromisoformat(raw_at.strip())
    except ValueError as exc:
        raise ToolError(f"`at` is not an RFC 3339 time: {raw_at!r}") from exc
    if at.tzinfo is None or at.utcoffset() is None:
        raise ToolError(f"`at` needs an offset (e.g. +01:00 or Z): {raw_at!r}")
    text = tool_input.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ToolError("`text` is required: what to send at that time")
    if len(text) > TEXT_MAX_CHARS:
        raise ToolError(f"`text` is longer than {TEXT_MAX_CHARS} characters")
    kind = tool_input.get("kind", "reminder") or "reminder"
    if kind not in KINDS:
        raise ToolError("`kind` is `reminder` (send the text) or `task` (run it as an instruction)")
    repeat = tool_input.get("repeat") or None
    if repeat is not None and not isinstance(repeat, str):
        raise ToolError("`repeat` is an RRULE string, e.g. FREQ=DAILY")
    if at > now + HORIZON:
        raise ToolError("`at` is more than five years ahead")
    if repeat is None:
        if at < now - PAST_GRACE:
            raise ToolError(
                f"`at` ({raw_at}) has already passed; it is now {now.isoformat(timespec='seconds')}"
            )
    else:
        repeat = repeat.strip().removeprefix("RRULE:")
        _check_repeat(repeat, at, tz, min_repeat)
    return ScheduleRequest(
        at=max(at, now) if repeat is None else at, text=text.strip(), repeat=repeat, kind=kind
    )


def _check_repeat(repeat: str, at: datetime, tz: ZoneInfo, min_repeat: timedelta) -> None:
    try:
        rule = _local_rule(repeat, at, tz)
        first_two = [_placed(d, tz) for d in rule.xafter(at.astimezone(tz).replace(tzinfo=None), 2, inc=True)]
    except (ValueError, TypeError) as exc:
        raise ToolError(f"`repeat` is not a valid RRULE: {exc}") from exc
    if not first_two:
        raise ToolError("`repeat` has no occurrence from `at` on")
    if len(first_two) == 2 and first_two[1] - first_two[0] < min_repeat:
        minutes = int(min_repeat.total_seconds() // 60)
        raise ToolError(f"`repeat` fires more often than once every {minutes} minutes, the chat's limit")


Schedule = Callable[[ScheduleRequest], Awaitable[str]]
"""Stores a checked request and returns the tool result (the confirmation and the id)."""


def schedule_message_tool(
    schedule: Schedule,
    *,
    clock: Callable[[], datetime],
    zone: Callable[[], Awaitable[ZoneInfo]],
    min_repeat: timedelta,
) -> Tool:
    """The tool; `schedule` is the gateway's side (store, confirm) of a request that passed the checks,
    `zone` reads the chat's time zone (repeats are computed on its wall clock)."""

    async def handler(tool_input: dict[str, Any]) -> str:
        request = parse_request(tool_input, now=clock(), tz=await zone(), min_repeat=min_repeat)
        return await schedule(request)

    return Tool(
        name=TOOL_NAME,
        description=(
            "Schedule a message in this chat for later: a reminder (the text is sent as is at that time) "
            "or a task (at that time you get the text as an instruction and answer it). Call it whenever "
            "you promise to remind or do something later; without this call nothing will happen. Times "
            "the user gives are in the chat's time zone (the tool's result names it). The user is shown "
            "a confirmation; do not restate the time."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "at": {
                    "type": "string",
                    "description": "When (first), RFC 3339 with offset, e.g. 2026-12-08T09:00:00+01:00",
                },
                "text": {
                    "type": "string",
                    "description": "A reminder's words as the user should read them, or a task's instruction",
                },
                "repeat": {
                    "type": "string",
                    "description": "Optional RFC 5545 RRULE from `at` on, e.g. FREQ=WEEKLY;BYDAY=MO",
                },
                "kind": {"type": "string", "enum": list(KINDS), "description": "default: reminder"},
            },
            "required": ["at", "text"],
            "additionalProperties": False,
        },
        handler=handler,
    )
