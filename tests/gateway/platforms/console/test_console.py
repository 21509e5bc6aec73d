"""The console adapter: lines in, messages out; `/file PATH [question]` sends a local file."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from gateway.errors import MediaFetchError
from gateway.platforms.base import IncomingMessage
from gateway.platforms.console.adapter import ConsoleAdapter, parse_file_command


async def run_lines(lines: list[str]) -> list[IncomingMessage]:
    reader = asyncio.StreamReader()
    reader.feed_data("".join(line + "\n" for line in lines).encode())
    reader.feed_eof()
    got: list[IncomingMessage] = []

    async def handler(message: IncomingMessage) -> None:
        got.append(message)

    adapter = ConsoleAdapter(stdin=reader, stdout=io.StringIO())
    await adapter.start(handler, [])
    await asyncio.wait_for(adapter.finished.wait(), 5)
    await adapter.stop()
    return got


def test_file_command_parsing() -> None:
    assert parse_file_command("/file notes.txt") == ("notes.txt", "")
    assert parse_file_command('/file "my scan.pdf" what does it say?') == ("my scan.pdf", "what does it say?")
    assert parse_file_command("/stats") is None
    assert parse_file_command("hello /file x") is None


async def test_file_command_sends_the_file_with_the_question(tmp_path: Path) -> None:
    path = tmp_path / "log file.txt"
    path.write_bytes(b"ERROR disk full\n")
    [message] = await run_lines([f'/file "{path}" why did it stop?'])
    assert not message.is_command
    assert message.text == "why did it stop?"
    [attachment] = message.attachments
    assert (attachment.kind, attachment.filename, attachment.mime_type, attachment.size) == (
        "document",
        "log file.txt",
        "text/plain",
        16,
    )
    assert attachment.fetch is not None
    assert await attachment.fetch() == b"ERROR disk full\n"


async def run_lines_out(lines: list[str]) -> tuple[list[IncomingMessage], str]:
    reader = asyncio.StreamReader()
    reader.feed_data("".join(line + "\n" for line in lines).encode())
    reader.feed_eof()
    got: list[IncomingMessage] = []
    out = io.StringIO()

    async def handler(message: IncomingMessage) -> None:
        got.append(message)

    adapter = ConsoleAdapter(stdin=reader, stdout=out)
    await adapter.start(handler, [])
    await asyncio.wait_for(adapter.finished.wait(), 5)
    await adapter.stop()
    return got, out.getvalue()


async def test_a_missing_or_empty_file_is_not_sent_and_the_console_says_why(tmp_path: Path) -> None:
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    got, out = await run_lines_out(
        [f"/file {tmp_path / 'nope.png'} what is this?", f"/file {empty}", "/file"]
    )
    assert got == []
    assert f"(There is no file {tmp_path / 'nope.png'} that I can read. Nothing was sent.)" in out
    assert f"({empty} is empty. Nothing was sent.)" in out
    assert "(Name a file: /file PATH [question]. Nothing was sent.)" in out


async def test_a_file_that_vanishes_before_it_is_read_is_reported_by_its_fetch(tmp_path: Path) -> None:
    path = tmp_path / "gone.txt"
    path.write_text("soon gone")
    [message] = await run_lines([f"/file {path}"])
    path.unlink()
    fetch = message.attachments[0].fetch
    assert fetch is not None
    with pytest.raises(MediaFetchError) as caught:
        await fetch()
    assert "could not be read (No such file or directory)" in caught.value.reason
