"""Start-up steps give way to a stop request; a signal becomes that request."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from gateway.app.lifecycle import StopRequested, stop_on_signals, unless_stopped


async def test_a_step_that_finishes_first_returns_its_result() -> None:
    async def step() -> str:
        await asyncio.sleep(0.01)
        return "connected"

    assert await unless_stopped(step(), asyncio.Event()) == "connected"


async def test_a_stop_request_cancels_the_step_it_interrupts() -> None:
    stop = asyncio.Event()
    cancelled = asyncio.Event()

    async def stuck() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    asyncio.get_running_loop().call_later(0.05, stop.set)
    with pytest.raises(StopRequested):
        await unless_stopped(stuck(), stop)
    assert cancelled.is_set()


async def test_a_failing_step_raises_its_own_error() -> None:
    async def refused() -> None:
        raise ValueError("token rejected")

    with pytest.raises(ValueError, match="token rejected"):
        await unless_stopped(refused(), asyncio.Event())


async def test_sigterm_sets_the_stop_request() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    stop_on_signals(stop, 8.0)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(stop.wait(), 2)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
