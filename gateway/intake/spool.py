"""A durable on-disk queue for incoming messages that could not be stored because the database was down.

One JSON line per `IncomingMessage`, appended, flushed and fsync'ed before the adapter's update is
acknowledged. A drainer replays the lines in order once the database answers again, then rewrites the
file without them (temp file + `os.replace`, so a crash leaves either the old or the new file). Lines
that cannot be decoded are moved to `<name>.bad` with an error log, never dropped.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, get_args

from gateway.errors import DatabaseUnavailableError
from gateway.platforms.base import (
    Attachment,
    Author,
    ChatKind,
    ChatRef,
    IncomingMessage,
    MediaKind,
    ReplyTo,
)

logger = logging.getLogger(__name__)

SPOOL_FILE = "incoming.jsonl"
FORMAT_VERSION = 1
_MEDIA_KINDS: frozenset[str] = frozenset(get_args(MediaKind))

Replay = Callable[[IncomingMessage], Awaitable[None]]
"""Stores one spooled message (idempotently) and schedules its turn; raises DatabaseUnavailableError."""


class SpoolFormatError(ValueError):
    """A spool line is not a message this version can read."""


def encode(msg: IncomingMessage) -> str:
    """One JSON line with everything needed to process the message again (not the adapter handle)."""
    chat = msg.chat
    author = msg.author
    record: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "chat": {
            "platform": chat.platform,
            "chat_id": chat.chat_id,
            "thread_id": chat.thread_id,
            "kind": chat.kind.value,
            "title": chat.title,
        },
        "author": {
            "user_id": author.user_id,
            "display_name": author.display_name,
            "is_bot": author.is_bot,
            "is_self": author.is_self,
            "is_anonymous_admin": author.is_anonymous_admin,
        },
        "text": msg.text,
        "platform_message_id": msg.platform_message_id,
        "sent_at": msg.sent_at.isoformat(),
        "mentions_bot": msg.mentions_bot,
        "reply_to_bot": msg.reply_to_bot,
        "is_command": msg.is_command,
        "command": msg.command,
        "command_args": msg.command_args,
        "command_target": msg.command_target,
        "is_edit": msg.is_edit,
        "is_forwarded": msg.is_forwarded,
        "forward_origin": msg.forward_origin,
        "media": list(msg.media),
        "caption": msg.caption,
    }
    if msg.attachments:
        record["attachments"] = [_encode_attachment(a) for a in msg.attachments]
    if msg.reply_to is not None:
        reply = msg.reply_to
        record["reply_to"] = {
            "platform_message_id": reply.platform_message_id,
            "author_name": reply.author_name,
            "text": reply.text,
            "quote": reply.quote,
            "to_bot": reply.to_bot,
        }
    # ensure_ascii keeps lone surrogates (which some platforms deliver) encodable as \\udxxx escapes.
    return json.dumps(record, ensure_ascii=True, separators=(",", ":"))


def _encode_attachment(attachment: Attachment) -> dict[str, Any]:
    """An attachment with its downloaded bytes (base64); the download handle cannot be kept."""
    return {
        "kind": attachment.kind,
        "filename": attachment.filename,
        "mime_type": attachment.mime_type,
        "size": attachment.size,
        "width": attachment.width,
        "height": attachment.height,
        "label": attachment.label,
        "duration_s": attachment.duration_s,
        "data": base64.b64encode(attachment.data).decode("ascii") if attachment.data is not None else None,
        "error": attachment.error,
    }


def _decode_attachment(record: Any) -> Attachment:
    if not isinstance(record, dict) or record.get("kind") not in _MEDIA_KINDS:
        raise SpoolFormatError("damaged attachment record")
    data = record.get("data")
    try:
        raw = base64.b64decode(data, validate=True) if isinstance(data, str) else None
    except ValueError as exc:
        raise SpoolFormatError("attachment data is not valid base64") from exc
    return Attachment(
        kind=record["kind"],
        filename=record.get("filename"),
        mime_type=record.get("mime_type"),
        size=record.get("size"),
        width=record.get("width"),
        height=record.get("height"),
        label=record.get("label"),
        duration_s=record.get("duration_s"),
        data=raw,
        error=record.get("error"),
    )


def _decode_reply(record: Any) -> ReplyTo | None:
    if record is None:
        return None
    if not isinstance(record, dict):
        raise SpoolFormatError("damaged reply record")
    message_id = record.get("platform_message_id")
    return ReplyTo(
        platform_message_id=None if message_id is None else str(message_id),
        author_name=record.get("author_name"),
        text=str(record.get("text") or ""),
        quote=record.get("quote"),
        to_bot=bool(record.get("to_bot")),
    )


def decode(line: str) -> IncomingMessage:
    """The message a line holds; `SpoolFormatError` when the line is damaged or of another version."""
    try:
        record = json.loads(line)
        if not isinstance(record, dict) or record.get("v") != FORMAT_VERSION:
            version = record.get("v") if isinstance(record, dict) else None
            raise SpoolFormatError(f"unknown spool record version {version!r}")
        chat, author = record["chat"], record["author"]
        media = tuple(record["media"])
        unknown = [m for m in media if m not in _MEDIA_KINDS]
        if unknown:
            raise SpoolFormatError(f"unknown media kind {unknown[0]!r}")
        return IncomingMessage(
            chat=ChatRef(
                platform=str(chat["platform"]),
                chat_id=str(chat["chat_id"]),
                thread_id=chat["thread_id"],
                kind=ChatKind(chat["kind"]),
                title=chat["title"],
            ),
            author=Author(
                user_id=str(author["user_id"]),
                display_name=str(author["display_name"]),
                is_bot=bool(author["is_bot"]),
                is_self=bool(author["is_self"]),
                is_anonymous_admin=bool(author["is_anonymous_admin"]),
            ),
            text=str(record["text"]),
            platform_message_id=str(record["platform_message_id"]),
            sent_at=datetime.fromisoformat(record["sent_at"]),
            mentions_bot=bool(record["mentions_bot"]),
            reply_to_bot=bool(record["reply_to_bot"]),
            is_command=bool(record["is_command"]),
            command=record["command"],
            command_args=str(record["command_args"]),
            command_target=record["command_target"],
            is_edit=bool(record["is_edit"]),
            is_forwarded=bool(record["is_forwarded"]),
            forward_origin=record["forward_origin"],
            media=media,
            caption=record["caption"],
            attachments=tuple(_decode_attachment(a) for a in record.get("attachments", ())),
            reply_to=_decode_reply(record.get("reply_to")),
        )
    except SpoolFormatError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise SpoolFormatError(f"damaged spool line: {type(exc).__name__}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class DrainResult:
    replayed: int
    remaining: int
    rejected: int


class Spool:
    """The spool file in `directory`; safe to use from one event loop (appends and drains serialise)."""

    def __init__(self, directory: Path, *, name: str = SPOOL_FILE) -> None:
        self.directory = directory
        self.path = directory / name
        self.bad_path = directory / (name + ".bad")
        self._lock = asyncio.Lock()
        self._depth = self._count_lines()

    @property
    def depth(self) -> int:
        """Messages waiting in the spool (for metrics and for keeping platform order during recovery)."""
        return self._depth

    def _count_lines(self) -> int:
        try:
            with self.path.open("rb") as fh:
                return sum(1 for line in fh if line.strip())
        except FileNotFoundError:
            return 0

    # -- writing -------------------------------------------------------------------------------------

    async def put(self, msg: IncomingMessage) -> None:
        """Append the message durably (fsync'ed) before returning."""
        line = encode(msg) + "\n"
        async with self._lock:
            await asyncio.to_thread(self._append_sync, line.encode("ascii"))
            self._depth += 1
        logger.warning(
            "database unavailable: spooled message %s of chat %s:%s to %s (%d waiting)",
            msg.platform_message_id,
            msg.chat.platform,
            msg.chat.chat_id,
            self.path,
            self._depth,
        )

    def _append_sync(self, data: bytes) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            _fsync_dir(self.directory)

    # -- draining ------------------------------------------------------------------------------------

    async def drain(self, replay: Replay) -> DrainResult:
        """Replay spooled messages in order until one fails with DatabaseUnavailableError.

        Replayed lines are removed; a line that cannot be decoded, or whose replay fails for any other
        reason, goes to the `.bad` file with an error log, so one poison entry never blocks the rest.
        Messages appended while the drain runs are kept for the next drain.
        """
        async with self._lock:
            lines, offset = await asyncio.to_thread(self._read_sync)
        done = rejected = 0
        bad: list[str] = []
        try:
            for line in lines:
                try:
                    msg = decode(line)
                except SpoolFormatError as exc:
                    logger.error("unreadable spool entry moved to %s: %s", self.bad_path, exc)
                    bad.append(line)
                    done += 1
                    rejected += 1
                    continue
                try:
                    await replay(msg)
                except DatabaseUnavailableError:
                    break
                except Exception:  # a refused statement or a bug: keep the entry aside, go on with the rest
                    logger.exception(
                        "could not write through spooled message %s of chat %s:%s; moved to %s",
                        msg.platform_message_id,
                        msg.chat.platform,
                        msg.chat.chat_id,
                        self.bad_path,
                    )
                    bad.append(line)
                    rejected += 1
                done += 1
        finally:
            if done:
                async with self._lock:
                    await asyncio.to_thread(self._rewrite_sync, lines[done:], offset, bad)
                    self._depth = self._count_lines()
        if done - rejected:
            logger.info("spool: wrote through %d message(s); %d waiting", done - rejected, self._depth)
        return DrainResult(replayed=done - rejected, remaining=self._depth, rejected=rejected)

    def _read_sync(self) -> tuple[list[str], int]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return [], 0
        # Only complete lines: a torn final line (crash mid-write) stays until it is completed or rotated.
        end = data.rfind(b"\n") + 1
        text = data[:end].decode("utf-8", "surrogateescape")
        return [line for line in text.split("\n") if line.strip()], end

    def _rewrite_sync(self, rest: list[str], offset: int, bad: list[str]) -> None:
        if bad:
            with self.bad_path.open("a", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write("".join(line + "\n" for line in bad))
                fh.flush()
                os.fsync(fh.fileno())
        with self.path.open("rb") as fh:
            fh.seek(offset)
            appended = fh.read()
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("wb") as fh:
            fh.write("".join(line + "\n" for line in rest).encode("utf-8", "surrogateescape"))
            fh.write(appended)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.directory)

    async def run(self, replay: Replay, *, interval_s: float = 1.0) -> None:
        """Drain every `interval_s` seconds until cancelled (the Gateway runs this as a task)."""
        while True:
            if self._depth:
                try:
                    await self.drain(replay)
                except OSError:
                    logger.exception("spool %s could not be rewritten; retrying", self.path)
            await asyncio.sleep(interval_s)


def _fsync_dir(directory: Path) -> None:
    """Make a file creation or rename durable (a no-op where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
