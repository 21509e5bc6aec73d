"""The fake Anthropic API as a separate process: its command line, and a client for its control endpoints.

``python -m tests.fakes.anthropic --port 0`` prints ``LISTENING <url>`` once it accepts connections and
serves until SIGTERM/SIGINT. ``spawn_fake_anthropic()`` starts it and yields a ``RemoteFakeAnthropic`` whose
methods mirror the in-process ``FakeAnthropic`` controls (as coroutines).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from agent.usage import Usage
from tests.fakes.anthropic.server import FakeAnthropic

REPO_ROOT = Path(__file__).resolve().parents[3]


def _pairs(values: list[str]) -> dict[str, int]:
    result: dict[str, int] = {}
    for value in values:
        name, _, number = value.partition("=")
        result[name] = int(number)
    return result


async def _serve(args: argparse.Namespace) -> None:
    fake = FakeAnthropic(
        api_key=args.api_key,
        port=args.port,
        context_windows=_pairs(args.context_window),
        min_cacheable=_pairs(args.min_cacheable),
        strict=not args.lenient,
        reply_delay=args.reply_delay,
        summary_delay=args.summary_delay,
    )
    if args.compaction_summary_tokens is not None:
        fake.compaction_summary_tokens = args.compaction_summary_tokens
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with fake:
        print(f"LISTENING {fake.base_url}", flush=True)  # the start-up handshake the parent waits for
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake Anthropic Messages API on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key", default="test-key")
    parser.add_argument("--context-window", action="append", default=[], metavar="MODEL=TOKENS")
    parser.add_argument("--min-cacheable", action="append", default=[], metavar="MODEL=TOKENS")
    parser.add_argument("--lenient", action="store_true", help="accept same-role runs and unknown keys")
    parser.add_argument("--reply-delay", type=float, default=0.0)
    parser.add_argument("--summary-delay", type=float, default=0.0)
    parser.add_argument(
        "--compaction-summary-tokens",
        type=int,
        default=None,
        help="budget of server-side compaction summaries",
    )
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(_serve(parser.parse_args(argv)))


class RemoteFakeAnthropic:
    """Controls of a fake running in another process, over its ``/_fake/`` endpoints."""

    def __init__(self, base_url: str, session: aiohttp.ClientSession) -> None:
        self.base_url = base_url
        self._session = session

    async def _post(self, path: str, payload: Any) -> Any:
        async with self._session.post(f"{self.base_url}/_fake/{path}", json=payload) as response:
            body = await response.json()
            if response.status != 200:
                raise ValueError(body.get("error", f"control call {path} failed with {response.status}"))
            return body

    async def script_reply(
        self,
        text: str | None = None,
        *,
        tool_uses: list[dict[str, Any]] | None = None,
        stop_reason: str | None = None,
        delay: float = 0.0,
        scope: str = "reply",
        thinking: str | None = None,
        thinking_tokens: int | None = None,
        progress: str | None = None,
        refusal: str | dict[str, str | None] | None = None,
        thinking_only: bool = False,
        within: str | None = None,
    ) -> None:
        """As ``FakeAnthropic.script_reply``; ``refusal`` is a category or ``{"category", "explanation"}``."""
        reply = {
            "text": text,
            "tool_uses": tool_uses,
            "stop_reason": stop_reason,
            "delay": delay,
            "scope": scope,
            "thinking": thinking,
            "thinking_tokens": thinking_tokens,
            "progress": progress,
            "refusal": refusal,
            "thinking_only": thinking_only,
            "within": within,
        }
        await self._post("script", reply)

    async def set_thinking(
        self,
        *,
        enforce_prefix_check: bool | None = None,
        default_display: str | None = None,
        high_tokens: int | None = None,
    ) -> dict[str, Any]:
        """Turn the prefix check on or off (older accounts), set what an absent display means and how
        much an unscripted answer thinks at high effort (``effort``)."""
        payload: dict[str, Any] = {}
        if enforce_prefix_check is not None:
            payload["enforce_prefix_check"] = enforce_prefix_check
        if default_display is not None:
            payload["default_display"] = default_display
        if high_tokens is not None:
            payload["high_tokens"] = high_tokens
        return dict(await self._post("thinking", payload))

    async def script_fault(
        self,
        kind: str,
        *,
        times: int = 1,
        retry_after: float | None = None,
        delay: float = 10.0,
        scope: str = "any",
    ) -> None:
        fault = {"kind": kind, "times": times, "retry_after": retry_after, "delay": delay, "scope": scope}
        await self._post("faults", fault)

    async def clear_faults(self) -> None:
        await self._post("faults", {"clear": True})

    async def set_pacing(self, *, first_token_s: float = 0.0, tokens_per_s: float = 0.0) -> None:
        await self._post("pacing", {"first_token_s": first_token_s, "tokens_per_s": tokens_per_s})

    async def set_compaction_summary_tokens(self, tokens: int) -> None:
        """The budget of the default server-side compaction summary."""
        await self._post("compaction", {"summary_tokens": tokens})

    async def advance(self, seconds: float) -> float:
        return float((await self._post("clock", {"advance": seconds}))["now"])

    async def set_time(self, when: float) -> float:
        return float((await self._post("clock", {"set": when}))["now"])

    async def reset(self) -> None:
        await self._post("reset", {})

    async def _snapshot(self) -> dict[str, Any]:
        async with self._session.get(f"{self.base_url}/_fake/requests") as response:
            response.raise_for_status()
            snapshot: dict[str, Any] = await response.json()
            return snapshot

    async def requests(self) -> list[dict[str, Any]]:
        return list((await self._snapshot())["requests"])

    async def total_usage(self) -> Usage:
        return Usage(**(await self._snapshot())["total_usage"])


@asynccontextmanager
async def spawn_fake_anthropic(
    *args: str, startup_timeout: float = 15.0
) -> AsyncIterator[RemoteFakeAnthropic]:
    """Start the fake as a child process (extra command-line ``args`` allowed) and stop it on exit."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.fakes.anthropic", "--port", "0", *args,
        cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), startup_timeout)).decode().strip()
        if not line.startswith("LISTENING "):
            raise RuntimeError(f"fake Anthropic process did not start: {line!r}")
        async with aiohttp.ClientSession() as session:
            yield RemoteFakeAnthropic(line.removeprefix("LISTENING "), session)
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()
