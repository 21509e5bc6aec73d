"""Tools the model may call: a name, a JSON schema and an async handler returning text.

`ToolRegistry.run` never raises for a tool's own failure: the model gets an error result it can
read and react to, and the failure is logged with its traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agent.errors import ToolError
from agent.types import Block

logger = logging.getLogger(__name__)

ToolHandler = Callable[[dict[str, Any]], Awaitable["str | ToolOutcome"]]
"""Returns the result text, or a `ToolOutcome` when the result carries blocks (an image to show)."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: ToolHandler

    def schema(self) -> dict[str, Any]:
        """The tool as the Messages API's `tools` entry."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    text: str
    is_error: bool = False
    blocks: tuple[Block, ...] = ()
    """Content blocks shown before the text (e.g. a `media_ref` the wire turns into an image)."""

    @property
    def content(self) -> str | list[Block]:
        """The tool_result's content: the text alone, or the blocks followed by the text."""
        if not self.blocks:
            return self.text
        return [*self.blocks, {"type": "text", "text": self.text}]


class ToolRegistry:
    """Named tools in registration order (the order is part of the cached prompt prefix)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self._tools.values()]

    async def run(self, name: str, tool_input: dict[str, Any]) -> ToolOutcome:
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return ToolOutcome(f"Unknown tool {name!r}. Available tools: {known}.", is_error=True)
        try:
            result = await tool.handler(tool_input)
            return result if isinstance(result, ToolOutcome) else ToolOutcome(result)
        except ToolError as exc:
            logger.info("tool %s reported an error: %s", name, exc)
            return ToolOutcome(f"Tool {name} failed: {exc}", is_error=True)
        except Exception as exc:
            logger.exception("tool %s raised", name)
            return ToolOutcome(f"Tool {name} failed: {type(exc).__name__}: {exc}", is_error=True)
