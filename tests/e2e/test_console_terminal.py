"""`python -m gateway chat` in a pseudo-terminal, against the fake Anthropic API in its own process: what a
person sees on the screen (pyte plays the terminal, answering prompt_toolkit's cursor position requests).

One process on a fresh SQLite file (no `make`, no migration run beforehand): the banner, line editing
with the Left arrow, the working indicator while a slow model thinks, a streamed markdown reply rendered
(no markers, no word broken at the edge), and a reply carrying a compaction notice printed once.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte
import pytest

from tests.e2e.harness import base_env
from tests.fakes.anthropic.process import REPO_ROOT, RemoteFakeAnthropic, spawn_fake_anthropic

pytestmark = pytest.mark.e2e

COLS, ROWS = 72, 200
MODEL = "claude-sonnet-4-6"
WINDOW = 6000
LEFT, UP = "\x1b[D", "\x1b[A"
PARAGRAPH = (
    "Stop the queue first, then restart the worker; afterwards check that every job it held was picked "
    "up again and that the error rate in the dashboard went back to normal within a few minutes."
)
MARKDOWN = (
    "## Restarting the worker\n\nThe restart is **complete** once the health check passes.\n\n"
    f"{PARAGRAPH}\n\n"
    "```sh\nsudo systemctl restart gateway-worker\n```\n\nDone."
)


class Terminal(pyte.Screen):  # type: ignore[misc]
    """A screen that answers the program's device status requests, as a real terminal does."""

    def __init__(self, child: pexpect.spawn) -> None:
        super().__init__(COLS, ROWS)
        self.child = child

    def write_process_input(self, data: str) -> None:
        self.child.send(data)


class Chat:
    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child
        self.screen = Terminal(child)
        self.stream = pyte.ByteStream(self.screen)

    def rows(self) -> list[str]:
        return [row.rstrip() for row in self.screen.display]

    def text(self) -> str:
        return "\n".join(row for row in self.rows() if row)

    def pump(self) -> None:
        while True:
            try:
                data = self.child.read_nonblocking(65536, timeout=0)
            except pexpect.TIMEOUT:
                return
            except pexpect.EOF:
                return
            self.stream.feed(data)

    async def until(self, what: str, check: Callable[[str], bool], timeout: float = 15.0) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            self.pump()
            if check(self.text()):
                return time.monotonic() - started
            await asyncio.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}; the screen shows:\n{self.text()}")

    async def shows(self, needle: str, timeout: float = 15.0) -> float:
        return await self.until(repr(needle), lambda text: needle in text, timeout)

    def type(self, keys: str) -> None:
        self.child.send(keys)


async def test_console_chat_in_a_terminal(tmp_path: Path) -> None:
    async with spawn_fake_anthropic(f"--context-window={MODEL}={WINDOW}") as llm:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "COLUMNS", "LINES"))},
            **base_env(
                database_url=f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}",
                anthropic_url=llm.base_url,
                tmp=tmp_path,
                MODEL_CONTEXT_LENGTH=str(WINDOW),
                AGENT__MAX_OUTPUT_TOKENS="512",
                COMPRESSION__PROTECT_LAST_N="1",
                PROMPT_CACHING__CACHE_TTL="5m",
                # only the thresholds compact here: whether the cache-aware compaction before a turn
                # finds anything to shorten depends on a summary's length within a few tokens
                SCHEDULER__CACHE_AWARE_SHARE="0.99",
                CONSOLE__LOG_FILE=str(tmp_path / "chat.log"),
                TERM="xterm",
            ),
        }
        child = pexpect.spawn(
            sys.executable, ["-m", "gateway", "chat"], cwd=str(REPO_ROOT), env=env, dimensions=(ROWS, COLS)
        )
        chat = Chat(child)
        try:
            await chat.shows("Console chat ready", timeout=30)
            await chat.shows("you>")
            await _line_editing(chat)
            await _working_indicator_and_rendered_stream(chat, llm)
            await _compaction_notice_once(chat, llm, tmp_path)
        except AssertionError:
            log = tmp_path / "chat.log"
            print(log.read_text() if log.exists() else "(no log)")
            raise
        finally:
            child.sendcontrol("d")
            child.expect(pexpect.EOF, timeout=15)
            child.close()
    assert child.exitstatus == 0, (child.exitstatus, chat.text())


async def _line_editing(chat: Chat) -> None:
    chat.type("wrld" + LEFT * 3 + "o\r")
    await chat.shows("bot> echo: world")
    chat.type(UP + "!\r")  # the previous line from history, edited
    await chat.shows("bot> echo: world!")
    assert "^[" not in chat.text()


async def _working_indicator_and_rendered_stream(chat: Chat, llm: RemoteFakeAnthropic) -> None:
    await llm.script_reply(MARKDOWN)
    await llm.set_pacing(first_token_s=1.5, tokens_per_s=400)
    chat.type("how do I restart the worker?\r")
    waited = await chat.shows("Working")
    assert waited < 1.0, f"no working indicator for {waited:.1f} s"
    await chat.until("the streamed reply", lambda text: re.search(r"^\s+Done\.$", text, re.M) is not None)
    await llm.set_pacing()
    text = chat.text()
    start = text.index("bot> Restarting the worker")
    reply = text[start:]
    assert "##" not in reply, reply
    assert "**" not in reply, reply
    assert "The restart is complete once" in reply
    assert "sudo systemctl restart gateway-worker" in reply
    shown = {word for row in reply.splitlines() for word in row.split()}
    broken = [word for word in PARAGRAPH.split() if word not in shown]
    assert not broken, f"words broken across rows: {broken}\n{reply}"
    assert all(row.startswith("     ") for row in reply.splitlines()[1:] if row and "you>" not in row), reply
    assert reply.count("Restarting the worker") == 1, reply


async def _compaction_notice_once(chat: Chat, llm: RemoteFakeAnthropic, tmp: Path) -> None:
    """Two large files on a 6,000-token window: the turns carry compaction notices, each reply is
    printed once and each notice once, under its reply."""
    middle = tmp / "middle.txt"
    middle.write_text(" ".join(f"middle talks about release planning {i};" for i in range(120)))
    newest = tmp / "newest.txt"
    newest.write_text(" ".join(f"newest notes on the staging database {i};" for i in range(100)))
    await llm.script_reply("REPLY-13 noted.")
    chat.type(f"/file {middle} keep this\r")
    await chat.shows("REPLY-13 noted.")
    # The session is now past the compression threshold, so a compaction follows the reply. A message
    # typed before it has read the session is compacted along with it, and the turn answering it has
    # nothing left to compact (and no notice to print): type once it is done, as a reader would.
    await _logged(tmp / "chat.log", r"trigger=after_reply outcome=")
    await llm.script_reply(tool_uses=[{"id": "toolu_grow01", "name": "current_time", "input": {}}])
    await llm.script_reply("REPLY-14 after compaction.")
    chat.type(f"/file {newest} and this\r")
    await chat.shows("REPLY-14 after compaction.")
    # The reply streams first; its notice is printed under it once the whole reply is delivered.
    await chat.until("the compaction notice under REPLY-14", lambda text: _notice_after(text, "REPLY-14"))
    text = chat.text()
    assert text.count("REPLY-13") == 1, text
    assert text.count("REPLY-14") == 1, text
    notices = re.findall(r"\(Context compact[^\n]*", text)
    assert notices, text
    assert len(notices) == len(set(notices)), text


def _notice_after(text: str, reply: str) -> bool:
    return "(Context compact" in text.partition(reply)[2]


async def _logged(log: Path, pattern: str, timeout: float = 15.0) -> None:
    """Wait until a line of the chat's log file matches `pattern`."""
    regex = re.compile(pattern)
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if _log_matches(log, regex):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no line matching {pattern!r} in {log} after {timeout}s")


def _log_matches(log: Path, regex: re.Pattern[str]) -> bool:
    return log.exists() and any(regex.search(line) for line in log.read_text().splitlines())
