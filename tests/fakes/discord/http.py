"""HTTP pieces of the fake Discord's REST side: JSON responses as Discord sends them, injected faults."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.discord.payloads import form_error


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # Exactly "application/json": discord.py treats a body with a charset parameter as text.
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return web.Response(body=json.dumps(body).encode(), status=status, headers=all_headers)


def error_response(status: int, code: int, message: str) -> web.Response:
    return json_response({"message": message, "code": code}, status)


@dataclass
class FaultSpec:
    method: str
    segments: list[str]
    status: int
    retry_after: float
    global_: bool
    code: int | None
    remaining: int

    def matches(self, method: str, path: str) -> bool:
        parts = path.strip("/").split("/")
        if method != self.method or len(parts) != len(self.segments):
            return False
        return all(s.startswith("{") or s == part for s, part in zip(self.segments, parts, strict=True))

    def response(self) -> web.Response:
        """The answer Discord gives for this fault, with the headers and body discord.py reads."""
        if self.status == 429:
            headers = {
                "Via": "1.1 google",
                "Retry-After": str(max(1, round(self.retry_after))),
                "X-RateLimit-Limit": "5",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset-After": f"{self.retry_after:.3f}",
                "X-RateLimit-Bucket": "fakebucket",
                "X-RateLimit-Scope": "global" if self.global_ else "user",
            }
            if self.global_:
                headers["X-RateLimit-Global"] = "true"
            body = {
                "message": "You are being rate limited.",
                "retry_after": self.retry_after,
                "global": self.global_,
            }
            return json_response(body, 429, headers)
        if self.status == 400:
            return json_response(form_error("content", "BASE_TYPE_BAD_LENGTH", "Invalid content"), 400)
        if self.status == 403:
            return error_response(403, self.code or 50013, "Missing Permissions")
        if self.status == 404:
            return error_response(404, self.code or 10003, "Unknown Channel")
        return error_response(self.status, self.code or 0, f"{self.status}: fault injected")
