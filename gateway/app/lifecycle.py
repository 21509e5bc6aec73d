"""Process lifecycle helpers: SIGINT/SIGTERM become a stop request at any phase, and a start-up step
is cancelled when a stop is requested before it finishes (containers kill 10 s after SIGTERM)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


def stop_on_signals(stop: asyncio.Event, budget_s: float) -> None:
    """SIGINT/SIGTERM set `stop`, at any phase of the process's life (installed before anything starts)."""
    loop = asyncio.get_running_loop()

    def request(sig: signal.Signals) -> None:
        if not stop.is_set():
            logger.info("%s received: stopping (within %.0fs)", sig.name, budget_s)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, request, sig)


class StopRequested(Exception):
    """SIGINT/SIGTERM arrived before the awaited start-up step finished (the step was cancelled)."""


async def unless_stopped(work: Awaitable[T], stop: asyncio.Event) -> T:
    """The result of `work`, unless `stop` is set first: then `work` is cancelled, `StopRequested` raised."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise StopRequested
    return task.result()
