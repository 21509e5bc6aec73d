"""A protocol-level fake of an embeddings API (`POST /v1/embeddings`) on 127.0.0.1.

It answers as Voyage AI does (`input_type`, `output_dimension`) and as OpenAI-style servers do
(`dimensions`, `encoding_format`), with vectors from `model.embed`. It checks the bearer key
and the body as the real APIs do (400 for an empty or oversized input list, or an empty string), and
can be told to fail (`fail`) or to answer slowly (`delay_s`).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.embeddings.model import DIMS, embed
from tests.fakes.local_server import LocalServer

MAX_INPUTS = 1000


@dataclass(slots=True)
class Recorded:
    body: dict[str, Any]
    authorization: str | None
    status: int


class FakeEmbeddings(LocalServer):
    def __init__(self, *, api_key: str = "embed-key", host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host=host, port=port)
        self.api_key = api_key
        self.requests: list[Recorded] = []
        self.delay_s = 0.0
        self._failures: list[int] = []

    @property
    def url(self) -> str:
        """The API root a client is configured with (`.../v1`)."""
        return self.base_url + "/v1"

    def fail(self, status: int = 500, times: int = 1) -> None:
        """Answer the next `times` requests with `status`."""
        self._failures += [status] * times

    def texts(self, input_type: str | None = None) -> list[str]:
        return [
            t
            for r in self.requests
            if r.status == 200 and (input_type is None or r.body.get("input_type") == input_type)
            for t in r.body["input"]
        ]

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        return app

    def _answer(self, body: dict[str, Any], auth: str | None, status: int, payload: Any) -> web.Response:
        self.requests.append(Recorded(body=body, authorization=auth, status=status))
        return web.json_response(payload, status=status)

    async def _embeddings(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization")
        try:
            body = await request.json()
        except ValueError:
            return self._answer({}, auth, 400, {"detail": "body is not JSON"})
        if self.delay_s:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.delay_s)
        if auth != f"Bearer {self.api_key}":
            return self._answer(body, auth, 401, {"detail": "Provided API key is invalid."})
        if self._failures:
            status = self._failures.pop(0)
            return self._answer(body, auth, status, {"detail": f"fake failure {status}"})
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs or len(inputs) > MAX_INPUTS:
            return self._answer(body, auth, 400, {"detail": "input must be a non-empty list of strings"})
        if not all(isinstance(t, str) and t for t in inputs) or not isinstance(body.get("model"), str):
            return self._answer(body, auth, 400, {"detail": "every input must be a non-empty string"})
        if body.get("input_type") not in (None, "query", "document"):
            return self._answer(body, auth, 400, {"detail": "input_type must be query or document"})
        dims = int(body.get("output_dimension") or body.get("dimensions") or DIMS)
        data = [
            {"object": "embedding", "embedding": embed(t, dims), "index": i} for i, t in enumerate(inputs)
        ]
        tokens = sum(len(t.split()) for t in inputs)
        payload = {"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": tokens}}
        return self._answer(body, auth, 200, payload)
