"""One aiohttp application served on a host and port: bound at start, its port known (also when bound
to port 0), released at stop. The metrics endpoint, the dashboard and the Telegram webhook each own one."""

from __future__ import annotations

from aiohttp import web


class LocalSite:
    def __init__(self, host: str, port: int, *, shutdown_timeout: float = 60.0) -> None:
        self.host = host
        self._port = port
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None

    @property
    def running(self) -> bool:
        return self._runner is not None

    async def serve(self, app: web.Application) -> None:
        """Bind and serve `app`; raises OSError when the port cannot be bound (nothing is left open)."""
        runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=self._shutdown_timeout
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self._port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner

    @property
    def port(self) -> int:
        """The bound port (the configured one until started)."""
        if self._runner is not None:
            for address in self._runner.addresses:
                if isinstance(address, tuple):
                    return int(address[1])
        return self._port

    async def stop(self) -> None:
        """Stop accepting; requests in flight get `shutdown_timeout` to finish."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
