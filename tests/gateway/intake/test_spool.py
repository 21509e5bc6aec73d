"""The disk spool: durable appends, in-order write-through, survival across restarts, damaged lines kept."""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gateway.errors import DatabaseUnavailableError, StoreError
from gateway.intake import spool as spool_module
from gateway.intake.spool import Spool, SpoolFormatError, decode, encode
from gateway.platforms.base import Author, ChatKind, ChatRef, IncomingMessage
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import running_bot
from tests.support.memory_adapter import ALICE

CHAT = ChatRef(platform="telegram", chat_id="42")


def message(n: int, **fields: object) -> IncomingMessage:
    values: dict[str, object] = {
        "chat": CHAT,
        "author": Author(user_id="42", display_name="Alice"),
        "text": f"message {n}",
        "platform_message_id": str(n),
        "sent_at": datetime(2025, 1, 2, 3, 4, n % 60, tzinfo=UTC),
    }
    values.update(fields)
    return IncomingMessage(**values)  # type: ignore[arg-type]


class Recorder:
    """A replay target that can be told to fail like a database that went away."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.fail_at: set[str] = set()
        self.refuse: set[str] = set()

    async def __call__(self, msg: IncomingMessage) -> None:
        if msg.platform_message_id in self.fail_at:
            raise DatabaseUnavailableError("connection refused")
        if msg.platform_message_id in self.refuse:
            raise StoreError("value too long")
        self.seen.append(msg.platform_message_id)


def test_encode_decode_keeps_every_field() -> None:
    original = message(
        7,
        chat=ChatRef(platform="discord", chat_id="9", thread_id="11", kind=ChatKind.GROUP, title="Team"),
        author=Author(user_id="5", display_name="Bob \u202e", is_anonymous_admin=True),
        text="lone \ud800 surrogate, emoji \U0001f469\u200d\U0001f4bb, NUL \x00",
        mentions_bot=True,
        reply_to_bot=True,
        is_edit=True,
        is_forwarded=True,
        forward_origin="Carol",
        media=("photo", "document"),
        caption="cap",
    )
    line = encode(original)
    assert "\n" not in line
    assert decode(line) == original


@pytest.mark.parametrize(
    "line",
    ['{"v": 99}', "not json", '{"v": 1, "chat": {}}', "[1, 2]", '{"v":1,"media":["hologram"]}'],
)
def test_decode_rejects_damaged_lines(line: str) -> None:
    with pytest.raises(SpoolFormatError):
        decode(line)


async def test_messages_are_written_through_in_order_and_removed(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    for n in range(1, 6):
        await spool.put(message(n))
    assert spool.depth == 5
    replay = Recorder()
    result = await spool.drain(replay)
    assert replay.seen == ["1", "2", "3", "4", "5"]
    assert (result.replayed, result.remaining, result.rejected) == (5, 0, 0)
    assert spool.depth == 0
    assert spool.path.read_text() == ""
    assert await spool.drain(replay) == spool_module.DrainResult(0, 0, 0)
    assert replay.seen == ["1", "2", "3", "4", "5"]


async def test_put_fsyncs_the_spool_file_before_returning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    spool = Spool(tmp_path / "spool")
    await spool.put(message(1))
    assert str(spool.path) in synced
    assert str(spool.directory) in synced  # the new file's directory entry is durable too
    assert decode(spool.path.read_text().strip()) == message(1)


async def test_outage_during_drain_keeps_the_rest_in_order(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    for n in range(1, 5):
        await spool.put(message(n))
    replay = Recorder()
    replay.fail_at = {"3"}
    result = await spool.drain(replay)
    assert replay.seen == ["1", "2"]
    assert (result.replayed, result.remaining) == (2, 2)
    replay.fail_at.clear()
    await spool.drain(replay)
    assert replay.seen == ["1", "2", "3", "4"]
    assert spool.depth == 0


async def test_spool_survives_a_restart(tmp_path: Path) -> None:
    first = Spool(tmp_path / "spool")
    await first.put(message(1))
    await first.put(message(2))
    del first
    reopened = Spool(tmp_path / "spool")
    assert reopened.depth == 2
    replay = Recorder()
    await reopened.drain(replay)
    assert replay.seen == ["1", "2"]


async def test_damaged_and_refused_entries_go_to_the_bad_file_with_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spool = Spool(tmp_path / "spool")
    await spool.put(message(1))
    with spool.path.open("a") as fh:
        fh.write('{"v": 1, "chat": \n')  # a torn write from a crash, completed by a later newline
    await spool.put(message(2))
    await spool.put(message(3))
    reopened = Spool(tmp_path / "spool")
    replay = Recorder()
    replay.refuse = {"3"}
    with caplog.at_level(logging.ERROR, logger="gateway.intake.spool"):
        result = await reopened.drain(replay)
    assert replay.seen == ["1", "2"]
    assert (result.replayed, result.rejected, result.remaining) == (2, 2, 0)
    bad = reopened.bad_path.read_text().splitlines()
    assert bad[0] == '{"v": 1, "chat": '
    assert decode(bad[1]).platform_message_id == "3"
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2
    assert any("telegram:42" in r.getMessage() for r in errors)


async def test_messages_spooled_during_a_drain_are_kept(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    await spool.put(message(1))
    await spool.put(message(2))
    seen: list[str] = []

    async def slow_replay(msg: IncomingMessage) -> None:
        seen.append(msg.platform_message_id)
        if msg.platform_message_id == "1":
            await spool.put(message(3))  # arrives while the drain is running

    await spool.drain(slow_replay)
    assert seen == ["1", "2"]
    assert spool.depth == 1
    await spool.drain(slow_replay)
    assert seen == ["1", "2", "3"]
    assert spool.depth == 0


async def test_gateway_spools_during_an_outage_and_answers_after_recovery(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeAnthropic() as fake, running_bot(fake, sqlite_url, spool_dir=tmp_path / "spool") as bot:
        real = bot.store.store_incoming
        down = True

        async def maybe_down(*args: object, **kwargs: object) -> object:
            if down:
                raise DatabaseUnavailableError("database unavailable during store_incoming")
            return await real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(bot.store, "store_incoming", maybe_down)
        await bot.adapter.post("first while down", user=ALICE)
        await bot.adapter.post("second while down", user=ALICE)
        assert bot.gateway.spool.depth == 2
        assert bot.adapter.sent == []
        down = False
        async with asyncio.timeout(10):
            while bot.gateway.spool.depth or not bot.adapter.sent:  # noqa: ASYNC110 - polls the gateway
                await asyncio.sleep(0.05)
        await bot.adapter.wait_idle()
        rows = await bot.window()
        assert [r.text for r in rows if r.role == "user"] == ["first while down", "second while down"]
        # Answered in order (together, or one turn each, depending on when the first turn starts).
        answers = [r.text for r in rows if r.role == "assistant"]
        assert answers[-1] in ("echo: second while down", "echo: first while down second while down")
        assert answers[0].startswith("echo: first while down")
        assert all(r.replied for r in rows if r.needs_reply)


async def test_an_unexpected_storage_error_spools_the_message_instead_of_dropping_it(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeAnthropic() as fake, running_bot(fake, sqlite_url, spool_dir=tmp_path / "spool") as bot:
        real = bot.store.store_incoming
        failures = [StoreError("deadlock detected")]

        async def fails_once(*args: object, **kwargs: object) -> object:
            if failures:
                raise failures.pop()
            return await real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(bot.store, "store_incoming", fails_once)
        await bot.adapter.post("kept despite the error", user=ALICE)
        assert "could not be stored; spooling it" in caplog.text
        async with asyncio.timeout(10):
            while bot.gateway.spool.depth or not bot.adapter.sent:  # noqa: ASYNC110 - polls the gateway
                await asyncio.sleep(0.05)
        await bot.adapter.wait_idle()
        rows = await bot.window()
        assert [r.text for r in rows if r.role == "user"] == ["kept despite the error"]
        assert bot.adapter.texts() == ["echo: kept despite the error"]


async def test_a_message_neither_stored_nor_spooled_is_not_acknowledged(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeAnthropic() as fake, running_bot(fake, sqlite_url, spool_dir=tmp_path / "spool") as bot:

        async def down(*args: object, **kwargs: object) -> object:
            raise DatabaseUnavailableError("connection refused")

        async def disk_full(msg: IncomingMessage) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(bot.store, "store_incoming", down)
        monkeypatch.setattr(bot.gateway.spool, "put", disk_full)
        # The handler raises, so an adapter does not confirm the update and the platform resends it.
        with pytest.raises(OSError, match="No space left"):
            await bot.adapter.post("nowhere to keep this", user=ALICE)
