"""An aiohttp application served on 127.0.0.1 for a test: `async with`, or `start`/`close`, and
`base_url` once it listens. The HTTP fakes (Anthropic, embeddings, transcription) build on it and
define only their routes (`_app`)."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Self

from aiohttp import web


class LocalServer:
    backlog = 128
    """Connections the listening socket queues (a load test raises it)."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        """Set by `close`: a handler that is waiting gives up."""
        self.base_url = ""

    def _app(self) -> web.Application:
        raise NotImplementedError

    async def start(self) -> str:
        self._runner = web.AppRunner(self._app(), shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port, backlog=self.backlog)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}"
        return self.base_url

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
