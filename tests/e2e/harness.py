"""Start the real gateway process (`python -m gateway run`) against protocol fakes and a fresh database.

The fakes run in the test's event loop; the gateway is a child process configured only through its
environment, exactly as an operator would run it. Its log lines are collected for assertions.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY_LINE = "gateway running"


class GatewayProcess:
    """One gateway child process; `logs` holds every line it wrote to stdout/stderr."""

    def __init__(self, env: Mapping[str, str], *, cwd: Path, args: tuple[str, ...] = ("run",)) -> None:
        self.env = dict(env)
        self.cwd = cwd
        self.args = args
        self.logs: list[str] = []
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._new_line = asyncio.Event()

    async def start(self, *, ready: str | None = READY_LINE, timeout: float = 40.0) -> None:
        base = {k: v for k, v in os.environ.items() if not _is_gateway_setting(k)}
        base.update(self.env)
        base["PYTHONPATH"] = str(ROOT) + os.pathsep + base.get("PYTHONPATH", "")
        base.setdefault("PYTHONUNBUFFERED", "1")
        # The suite starts a few hundred gateways: let the first leave the bytecode of agent/ and gateway/
        # behind (as a plain `python` does) for the others to load instead of compiling ~180 modules each
        # (a third of a second of CPU per start) when the shell sets PYTHONDONTWRITEBYTECODE.
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gateway",
            *self.args,
            cwd=self.cwd,
            env=base,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            limit=16 * 1024 * 1024,
        )
        self._reader = asyncio.create_task(self._read())
        if ready is not None:
            await self.wait_log(ready, timeout=timeout)

    async def _read(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            self.logs.append(line.decode("utf-8", "replace").rstrip("\n"))
            self._new_line.set()
        self._new_line.set()

    def log_text(self) -> str:
        return "\n".join(self.logs)

    async def wait_log(self, pattern: str, *, timeout: float = 20.0, after: int = 0) -> str:
        """The first log line (from index `after`) matching `pattern`; fails with the logs on timeout."""
        regex = re.compile(pattern)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for line in self.logs[after:]:
                if regex.search(line):
                    return line
            exited = self.proc is not None and self.proc.returncode is not None
            if exited and self._reader is not None and self._reader.done():
                code = self.proc.returncode if self.proc else None
                raise AssertionError(f"gateway exited ({code}) before {pattern!r}:\n{self.log_text()}")
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"no log line matching {pattern!r} in {timeout}s:\n{self.log_text()}")
            self._new_line.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._new_line.wait(), timeout=min(remaining, 0.5))

    async def stop(self, *, timeout: float = 20.0) -> int:
        """SIGTERM and wait (a graceful stop); returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), timeout=timeout)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        if self._reader is not None:
            await self._reader
        return self.proc.returncode or 0

    async def kill(self) -> None:
        """SIGKILL: a crash, no cleanup."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        if self._reader is not None:
            await self._reader

    def assert_no_secret(self, *secrets: str) -> None:
        text = self.log_text()
        for secret in secrets:
            assert secret not in text, "a secret appeared in the gateway's logs"


def _is_gateway_setting(name: str) -> bool:
    """Environment variables of the developer's shell that must not leak into a test gateway."""
    upper = name.upper()
    prefixes = (
        "TELEGRAM_",
        "DISCORD_",
        "ANTHROPIC_",
        "COMPRESSION__",
        "PROMPT_CACHING__",
        "AUXILIARY__",
        "CONTEXT__",
        "AGENT__",
        "LIMITS__",
        "SCHEDULER__",
        "OBSERVABILITY__",
        "EMBEDDINGS__",
        "STREAMING__",
        "FLEET__",
        "TOOLS__",
        "DASHBOARD__",
    )
    return upper.startswith(prefixes) or upper in {
        "DATABASE_URL",
        "MODEL",
        "MODEL_CONTEXT_LENGTH",
        "GATEWAY_ALLOW_ALL_USERS",
        "LOG_LEVEL",
        "SPOOL_DIR",
        "SHUTDOWN_TIMEOUT_S",
    }


@contextlib.asynccontextmanager
async def running_gateway(
    env: Mapping[str, str], *, cwd: Path, ready: str | None = READY_LINE
) -> AsyncIterator[GatewayProcess]:
    gw = GatewayProcess(env, cwd=cwd)
    try:
        await gw.start(ready=ready)
        yield gw
    finally:
        await gw.stop()


def base_env(*, database_url: str, anthropic_url: str, tmp: Path, **extra: str) -> dict[str, str]:
    """Environment for a test gateway: fake Anthropic, the given database, local spool, debug-free logs."""
    env = {
        "DATABASE_URL": database_url,
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": anthropic_url,
        "MODEL": "claude-sonnet-4-6",
        "LOG_LEVEL": "INFO",
        "SPOOL_DIR": str(tmp / "spool"),
        "SCHEDULER__ENABLED": "false",
        # the API's web tools change every request's tool list: on only where a test asks for them
        "TOOLS__WEB_SEARCH__ENABLED": "false",
        "TOOLS__WEB_FETCH__ENABLED": "false",
        # so does schedule_message (and it adds /reminders and /timezone): on where a test asks for it
        "REMINDERS__ENABLED": "false",
    }
    env.update(extra)
    return env
