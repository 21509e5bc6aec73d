"""The `current_time` tool: the current date and time with its timezone, from an injected clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from agent.errors import ToolError
from agent.tools.registry import Tool

Clock = Callable[[], datetime]


def current_time_tool(clock: Clock) -> Tool:
    """A tool answering with `clock()` as ISO 8601 (the clock must return an aware datetime)."""

    async def handler(tool_input: dict[str, Any]) -> str:
        now = clock()
        if now.tzinfo is None or now.utcoffset() is None:
            raise ToolError("the clock returned a time without a timezone")
        return f"{now.isoformat(timespec='seconds')} ({now.strftime('%A')}, {now.tzname()})"

    return Tool(
        name="current_time",
        description="Returns the current date and time (ISO 8601, with timezone and weekday).",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        handler=handler,
    )
