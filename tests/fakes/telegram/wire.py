"""Wire shapes of the fake Bot API: error answers, request parameters, recorded sends and faults."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

MAX_TEXT = 4096
FAULTS = {
    "retry_after": (429, "Too Many Requests: retry after {retry_after}"),
    "parse_error": (400, 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 0'),
    "forbidden": (403, "Forbidden: bot was blocked by the user"),
    "chat_not_found": (400, "Bad Request: chat not found"),
    "server_error": (500, "Internal Server Error"),
}


class ApiError(Exception):
    """An error answer: HTTP status, Telegram description and optional response parameters."""

    def __init__(self, status: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters


@dataclass
class Fault:
    kind: str
    retry_after: int = 1


@dataclass
class Sent:
    """One message the bot sent (or edited)."""

    chat_id: int
    text: str
    parse_mode: str | None
    message_id: int
    visible_text: str
    message_thread_id: int | None = None
    reply_to: int | None = None
    edited: bool = False
    raw: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)


@dataclass
class Draft:
    """One `sendMessageDraft` call: an ephemeral preview in a private chat (never a message)."""

    chat_id: int
    draft_id: int
    text: str
    parse_mode: str | None
    visible_text: str
    message_thread_id: int | None = None
    at: float = field(default_factory=time.monotonic)


class Params:
    """Request parameters as PTB sends them: form fields (non-strings JSON-encoded) or a JSON body."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def get_str(self, name: str) -> str | None:
        value = self.values.get(name)
        return None if value is None else str(value)

    def get_json(self, name: str) -> Any:
        value = self.values.get(name)
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                raise ApiError(400, f"Bad Request: can't parse {name} JSON object") from None
        return value

    def get_int(self, name: str) -> int | None:
        value = self.get_json(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ApiError(400, f"Bad Request: invalid {name} specified")
        return value


def scope_key(scope: Any, language_code: str | None) -> str:
    scope = scope or {"type": "default"}
    return json.dumps(scope, sort_keys=True) + "|" + (language_code or "")


def error_response(exc: ApiError) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": exc.status, "description": exc.description}
    if exc.parameters:
        body["parameters"] = exc.parameters
    return web.json_response(body, status=exc.status)
