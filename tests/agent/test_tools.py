"""The tool registry and the built-in current_time tool (recall: test_recall_tool.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from agent.errors import ToolError
from agent.tools.current_time import current_time_tool
from agent.tools.registry import Tool, ToolRegistry


async def _echo(tool_input: dict[str, Any]) -> str:
    return f"echo {tool_input.get('x')}"


async def _boom(tool_input: dict[str, Any]) -> str:
    raise RuntimeError("disk on fire")


async def _refuse(tool_input: dict[str, Any]) -> str:
    raise ToolError("not allowed here")


def tool(name: str, handler: Any = _echo) -> Tool:
    return Tool(name, f"{name} tool", {"type": "object", "properties": {}}, handler)


async def test_registry_runs_tools_and_reports_failures_as_error_results() -> None:
    registry = ToolRegistry([tool("echo"), tool("boom", _boom), tool("refuse", _refuse)])
    assert [s["name"] for s in registry.schemas()] == ["echo", "boom", "refuse"]
    assert registry.schemas()[0] == {
        "name": "echo",
        "description": "echo tool",
        "input_schema": {"type": "object", "properties": {}},
    }
    ok = await registry.run("echo", {"x": 3})
    assert (ok.text, ok.is_error) == ("echo 3", False)
    crashed = await registry.run("boom", {})
    assert crashed.is_error
    assert "disk on fire" in crashed.text
    refused = await registry.run("refuse", {})
    assert refused.is_error
    assert "not allowed here" in refused.text
    unknown = await registry.run("nope", {})
    assert unknown.is_error
    assert "nope" in unknown.text
    assert "echo" in unknown.text


def test_duplicate_tool_names_are_rejected() -> None:
    registry = ToolRegistry([tool("echo")])
    with pytest.raises(ValueError):
        registry.register(tool("echo"))


async def test_current_time_reports_the_injected_clock_with_its_zone() -> None:
    zone = timezone(timedelta(hours=2), "CEST")
    registry = ToolRegistry([current_time_tool(lambda: datetime(2026, 3, 14, 15, 9, 26, tzinfo=zone))])
    outcome = await registry.run("current_time", {})
    assert not outcome.is_error
    assert outcome.text.startswith("2026-03-14T15:09:26+02:00")
    assert "Saturday" in outcome.text
    naive = ToolRegistry([current_time_tool(lambda: datetime(2026, 3, 14, 15, 9))])
    assert (await naive.run("current_time", {})).is_error
